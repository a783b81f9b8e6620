"""Issue 19: the sampling queries' context is read once per process, not once per window.

``fetch_sampling`` asks each unit's sample times over the window and two of the longest
scrape intervals before it. When the previous window of the same query ended where this
one starts, it now asks only the window and its start step, and takes the older context
from the previous answer. One history — DCGM scraped every 15 s, node_exporter every 60 s,
a node going down just before a window — is ingested twice in two
cycles of several chunks (a 30 s step): with the context kept, and with it read whole for
every window (today's reads). Every stored GPU and IB row must be the same, and only the
first window of each sampling query may read the whole context.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import override_settings

from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from ingest.sources import base
from simulator import Cluster, ClusterSpec
from simulator.history import write_history
from simulator.scenarios import with_scenario
from simulator.spec import Dialect
from tests.alerts.acceptance import empty_ingest_tables
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
EPOCH = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)  # pinned
STEP = 30
HOUR = 3600.0
CHUNK = 25
PINNED = {
    "INGEST_PROMETHEUS_RETENTION_DAYS": 100_000,
    "INGEST_RAW_RETENTION_DAYS": 100_000,
    "INGEST_STEP_SECONDS": STEP,
    "INGEST_CHUNK_STEPS": CHUNK,
    "INGEST_MAX_SCRAPE_INTERVAL_SECONDS": 120,
}
CONTEXT = 240  # two of the longest scrape intervals, in whole steps
INTERVALS = {
    Dialect.DCGM: 15.0, Dialect.NODE_IB: 60.0, Dialect.TREYDOCK: 120.0,
    Dialect.KSM: 30.0, Dialect.KUEUE: 30.0, Dialect.CHECKPOINTS: 60.0,
}  # fmt: skip
GPU_ROWS = "SELECT n.name, s.* FROM ingest_gpuhot s JOIN ingest_node n ON n.id = s.node_id"
IB_ROWS = (
    "SELECT n.name, p.device, p.port, s.* FROM ingest_ibhot s "
    "JOIN ingest_ibport p ON p.id = s.port_id JOIN ingest_node n ON n.id = s.node_id"
)


def rows(sql: str) -> list[tuple]:
    """Every row of ``sql`` without the surrogate ids (names instead), sorted."""
    with connection.cursor() as cursor:
        cursor.execute(sql)
        names = [c.name for c in cursor.description]
        keep = [i for i, name in enumerate(names) if not name.endswith("_id") and name != "id"]
        return sorted((tuple(row[i] for i in keep) for row in cursor.fetchall()), key=repr)


def ingested(client: PrometheusClient, start: float, end: float, kept: int) -> tuple:
    """(GPU rows, IB rows, each sampling read as (query, its first step, the window's start))
    with at most ``kept`` sampling contexts kept (0: every window reads its whole context)."""
    reads: list[tuple[str, float, float]] = []
    fetch_sampling, real = base.fetch_sampling, base.read_steps

    def fetch(client, promql, window, unit_of):  # noqa: ANN001, ANN202
        def read_steps(client, queries, end, step):  # noqa: ANN001, ANN202
            reads.append((promql, queries[0][1].timestamp(), window.start.timestamp()))
            return real(client, queries, end, step)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(base, "read_steps", read_steps)
            return fetch_sampling(client, promql, window, unit_of)

    base.forget_sampling()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "SAMPLED_KEPT", kept)
        patch.setattr("ingest.sources.dcgm.fetch_sampling", fetch)
        patch.setattr("ingest.sources.infiniband.fetch_sampling", fetch)
        try:
            with override_settings(**PINNED):
                middle = datetime.fromtimestamp(start + HOUR / 2, UTC)
                ingest_all(since=datetime.fromtimestamp(start, UTC), until=middle, client=client)
                ingest_all(until=datetime.fromtimestamp(end - STEP, UTC), client=client)
            return rows(GPU_ROWS), rows(IB_ROWS), reads
        finally:
            empty_ingest_tables()


@pytest.fixture(scope="module")
def both(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker
) -> Iterator[tuple[tuple, tuple, float]]:  # noqa: ANN001
    """The hour before EPOCH (each dialect at its own interval, in a real Prometheus) ingested
    with the context kept and with it read whole: (kept, whole, the history's start)."""
    require_prometheus()
    workdir = Path(tmp_path_factory.mktemp("sampling-context"))
    spec = with_scenario(ClusterSpec(nodes=8, seed=3, epoch=EPOCH), "busy_healthy")
    # down from 20 s before the window at EPOCH - 2100 s (chunks of 750 s from EPOCH - 1 h) to
    # EPOCH - 320 s: that window sees the node's last sample and nothing before it
    spec = with_scenario(spec, "node_down", EPOCH - timedelta(seconds=2120))
    spec = with_scenario(spec, "ib_symbol_errors", EPOCH - timedelta(minutes=50))
    end = EPOCH.timestamp()
    om = workdir / "history.om"
    write_history(Cluster(spec), end - HOUR, end, STEP, om, "key", INTERVALS)
    create_blocks(om, workdir / "tsdb")
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n")
    prometheus = PrometheusProcess(config, workdir / "tsdb", retention="100y").start()
    try:
        client = PrometheusClient(prometheus.url, timeout=120)
        with django_db_blocker.unblock():
            kept = ingested(client, end - HOUR, end, base.SAMPLED_KEPT)
            whole = ingested(client, end - HOUR, end, 0)
        yield kept, whole, end - HOUR
    finally:
        prometheus.stop()


def test_a_kept_context_stores_what_a_whole_context_stores(both) -> None:  # noqa: ANN001
    (gpu, ib, kept_reads), (whole_gpu, whole_ib, whole_reads), start = both

    assert len(gpu) > 8 * 8 * 100 and len(ib) > 8 * 8 * 40  # something was stored
    assert gpu == whole_gpu
    assert ib == whole_ib
    # the node that went down stored nothing while down, in both
    down = EPOCH - timedelta(minutes=35), EPOCH - timedelta(minutes=15)
    assert len({row[0] for row in gpu if down[0] <= row[1] < down[1]}) == 7

    queries = sorted({query for query, _first, _start in whole_reads})
    # DCGM and node_exporter IB (this history's treydock series are info series only)
    assert len(queries) == 2
    assert [first - window for _q, first, window in whole_reads] == [-CONTEXT] * len(whole_reads)
    windows = len(whole_reads) // 3
    assert windows == len(kept_reads) // 3 >= 4  # several chunks in each of the two cycles
    for query in queries:
        firsts = [(first, window) for q, first, window in kept_reads if q == query]
        assert firsts[0] == (start - CONTEXT, start)
        assert firsts[1:] == [(window, window) for _first, window in firsts[1:]]
