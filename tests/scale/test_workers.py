"""Two real Celery workers split one ingest cycle; a worker killed mid-shard leaves no gap.

Both run against a real Prometheus fed by the simulator; the reference is a
single-process, unsharded ingest of the same window into emptied tables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from ingest import services
from ingest.models import IngestCursor, ShardCursor
from ingest.prometheus import PrometheusClient
from ingest.tasks import ingest_cycle
from tests.scale.conftest import FAMILIES, INGEST_ENV, dump_rows, forget_ingest, history_point
from tests.support.processes import (
    PAUSED,
    CeleryWorker,
    run_celery_worker,
    subprocess_env,
    wait_until,
)
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("ingest_settings"),
]
SHARDS = 8


@contextlib.contextmanager
def worker(log_dir: Path, **overrides: str) -> Iterator[CeleryWorker]:
    """A worker with the test's ingest settings, INGEST_SHARDS=8 and ``overrides``."""
    env = subprocess_env(**INGEST_ENV, INGEST_SHARDS=str(SHARDS), **overrides)
    log_dir.mkdir(parents=True, exist_ok=True)
    with run_celery_worker(env, log_dir=log_dir) as running:
        yield running


def shards_run(running: CeleryWorker) -> int:
    """How many shard tasks the worker has executed (its own ``stats`` counters)."""
    from config.celery import app

    stats = app.control.inspect(destination=[running.nodename], timeout=2.0).stats() or {}
    return int(stats.get(running.nodename, {}).get("total", {}).get("ingest.tasks.ingest_shard", 0))


def covered(until: datetime) -> bool:
    """Both families' cursors have reached ``until``."""
    cursors = dict(IngestCursor.objects.values_list("family", "covered_until"))
    return all(cursors.get(family) == until for family in FAMILIES)


def single_process_rows(
    until: datetime, since: datetime | None = None
) -> dict[str, list[tuple[object, ...]]]:
    """What one unsharded ingest of the same window stores (tables emptied first)."""
    forget_ingest()
    client = PrometheusClient()
    services.ingest_all(until=until, since=since, families=FAMILIES, client=client)
    return dump_rows()


def test_two_workers_split_a_cycle_and_store_what_one_process_stores(
    sharded_prometheus: SimulatedPrometheus, tmp_path: Path
) -> None:
    until = history_point(sharded_prometheus, 60)
    with worker(tmp_path / "a", **PAUSED, INGEST_CHUNK_PAUSE_SECONDS="0.2") as first:
        with worker(tmp_path / "b", **PAUSED, INGEST_CHUNK_PAUSE_SECONDS="0.2") as second:
            ingest_cycle.apply_async(kwargs={"until": until.isoformat(), "families": FAMILIES})
            wait_until(lambda: covered(until), 60, "both families covered by the shards")
            done = [shards_run(w) for w in (first, second)]
    assert all(done), f"each worker must run shards, ran {done}"
    assert ShardCursor.objects.filter(shards=SHARDS, covered_until=until).count() == 2 * SHARDS
    sharded = dump_rows()
    assert sharded["gpu"] and sharded["ib"] and sharded["xid"]
    assert sharded == single_process_rows(until)


def _mid_shard() -> bool:
    """Some shard has committed a chunk but not its whole window."""
    cursors = list(
        ShardCursor.objects.filter(shards=SHARDS).values_list("covered_until", flat=True)
    )
    return len(set(cursors)) > 1


def test_a_worker_killed_mid_shard_leaves_no_gap_after_the_next_cycle(
    sharded_prometheus: SimulatedPrometheus, tmp_path: Path
) -> None:
    first_end = history_point(sharded_prometheus, 300)
    next_end = history_point(sharded_prometheus, 60)
    with worker(tmp_path / "doomed", **PAUSED, INGEST_CHUNK_PAUSE_SECONDS="1") as doomed:
        ingest_cycle.apply_async(kwargs={"until": first_end.isoformat(), "families": FAMILIES})
        wait_until(_mid_shard, 60, "a shard part-way through its window")
        doomed.kill()
    assert not covered(first_end)
    with worker(tmp_path / "survivor"):
        ingest_cycle.apply_async(kwargs={"until": next_end.isoformat(), "families": FAMILIES})
        wait_until(lambda: covered(next_end), 90, "the next cycle to cover both families")
    first_start = first_end - timedelta(seconds=int(INGEST_ENV["INGEST_INITIAL_LOOKBACK_SECONDS"]))
    assert dump_rows() == single_process_rows(next_end, since=first_start)
