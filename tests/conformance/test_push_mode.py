"""Push mode stores what query_range stores, across a counter reset, a node down and a sender restart.

The history of tests/conformance/test_read_paths.py (2 nodes, both IB dialects, per
dcgm-exporter dialect; gpu-002 down for 90 s with staleness markers, gpu-001's counters
reset at a reboot, a Prometheus restart) lies in a real Prometheus. A receiver
(``ingest.push_receiver``, on its own port, clock pinned after the history) is given what
that Prometheus would have forwarded by remote write: every sample, except that the
restart lost the last sample before it of one series (its shard had not sent it yet), and
the receiver is told of the restart as its runtimeinfo poll would tell it.

Ingest then runs every family over the whole window twice, once with PROMETHEUS_READ_PATH=
query_range and once in push mode, and every row of every table it writes must be the same.
In push mode the steps of the first lookback (before the receiver's data) and those of the
restart's gap are read from Prometheus, the rest come from the receiver.

"sharded": three receivers (INGEST_PUSH_URL a list), each given the series whose ``instance``
Prometheus' ``hashmod`` puts in its shard (each of the three gets some: the IB exporters,
one node's node_exporter, both dcgm-exporters), the restart told to each of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import override_settings

from ingest import push_reads
from ingest.models import IngestCursor, ShardCursor
from ingest.push_receiver import Receiver, serve
from ingest.push_store import PushStore, hashmod
from tests.conformance.scrapes import T0, ingest
from tests.conformance.test_read_paths import (
    BACK,
    END,
    RESTART,
    SINCE,
    UNTIL,
    between,
    cluster_series,
    prometheus_holding,
    stored_rows,
)
from tests.support.prometheus import PrometheusProcess
from tests.support.remote_write import write_requests
from tests.support.timeseries import truncate_timeseries

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
TOKEN = "push-mode-test-token"
#: When the restarted Prometheus' queues started (between its last and first samples).
SENDER_RESTART = T0 + 540
#: The metric one of whose series lost its last sample before the restart (never sent).
LOST = ("DCGM_FI_DEV_GPU_UTIL", "dcgm_gpu_utilization")
KEPT = r"DCGM_FI_.*|dcgm_.*|node_infiniband_.*|infiniband_.*"


def forwarded(series: dict) -> tuple[dict, dict, tuple]:
    """(before the restart, after it, the lost sample's key): what remote write delivers."""
    before = between(series, T0, RESTART)
    lost = next(
        key
        for key in sorted(before)
        if key[0][1] in LOST and len(before[key]) > 1 and before[key][-1][1] != before[key][-2][1]
    )  # a value that changed: its loss would show in a pushed answer
    before[lost] = before[lost][:-1]
    return before, between(series, BACK, END), lost


@pytest.fixture(scope="module", params=["current", "legacy"])
def pushed_history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, PrometheusProcess, dict]]:
    workdir = tmp_path_factory.mktemp(f"push_mode_{request.param}")
    series = cluster_series(workdir, legacy=request.param == "legacy")
    for prometheus in prometheus_holding(workdir, series):
        yield request.param, prometheus, series


def _shard(series: dict, index: int, count: int) -> dict:
    return {k: v for k, v in series.items() if hashmod(dict(k).get("instance", ""), count) == index}


@pytest.fixture(params=["steady", "restart", "sharded"])
def receiver(
    request: pytest.FixtureRequest, pushed_history: tuple[str, PrometheusProcess, dict]
) -> Iterator[tuple[str, list[Receiver]]]:
    """A receiver given every sample ("steady"), or the restart's loss and notice ("restart");
    or three receivers given their shards of the latter ("sharded")."""
    _dialect, _prometheus, series = pushed_history
    before, after, _lost = forwarded(series)
    if request.param == "steady":  # what Prometheus holds, all of it sent
        before = between(series, T0, RESTART)
    count = 3 if request.param == "sharded" else 1
    made, servers = [], []
    for index in range(count):
        store = PushStore(
            lookback_ms=300_000,
            retention_ms=24 * 3_600_000,
            delay_ms=15_000,
            data_from_ms=round(T0 * 1000),
            kept_name=re.compile(KEPT),
            shard=(index, count),
        )
        one = Receiver(store, TOKEN, max_bytes=64 << 20, clock=lambda: END + 60)
        one.sender_seen(round((T0 - 3600) * 1000))
        for body in write_requests(_shard(before, index, count)):
            one.write("application/x-protobuf", "snappy", body)
        if request.param != "steady":
            one.sender_seen(round(SENDER_RESTART * 1000))
        for body in write_requests(_shard(after, index, count)):
            one.write("application/x-protobuf", "snappy", body)
        assert store.counters.misrouted == 0
        assert store.by_name, f"shard {index}/{count} got no series"
        made.append(one)
        servers.append(serve(one, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=30))
    urls = ",".join(f"http://127.0.0.1:{server.server_port}" for server in servers)
    try:
        yield urls, made
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def ingested(prometheus: PrometheusProcess, push_url: str = "") -> dict[str, list[tuple]]:
    truncate_timeseries()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM ingest_xidevent")
    IngestCursor.objects.all().delete()
    ShardCursor.objects.all().delete()
    families = ["gpu", "ib", "kueue", "cluster", "runs", "checkpoints"]
    with override_settings(
        PROMETHEUS_READ_PATH="query_range", INGEST_PUSH_URL=push_url, INGEST_PUSH_TOKEN=TOKEN
    ):
        ingest(prometheus, families, SINCE, UNTIL)
    return stored_rows()


def gap_start(delivered: dict, restart_ms: int, lookback_ms: int) -> int:
    """The oldest "last sample before the restart" among the series active in its lookback."""
    lasts = [
        max(t for t, _v in samples if t < restart_ms)
        for key, samples in delivered.items()
        if re.fullmatch(KEPT, key[0][1]) and any(t < restart_ms for t, _v in samples)
    ]
    return min([t for t in lasts if t >= restart_ms - lookback_ms] or [restart_ms])


def test_push_mode_stores_what_query_range_stores(
    pushed_history: tuple[str, PrometheusProcess, dict], receiver: tuple[str, Receiver]
) -> None:
    dialect, prometheus, series = pushed_history
    url, receivers = receiver
    before, _after, _lost = forwarded(series)
    restart_ms = round(SENDER_RESTART * 1000)
    made = receivers[0]
    if len(receivers) > 1:
        for one in receivers:
            shard = _shard(before, *one.store.shard)
            assert one.store.gaps == [(gap_start(shard, restart_ms, 300_000), restart_ms + 300_000)]
    elif made.store.counters.sender_restarts:
        # The gap: from the oldest last sample before the restart (gpu-002's staleness
        # markers at T0+390: it was down) to a lookback after the restart.
        assert made.store.gaps == [(gap_start(before, restart_ms, 300_000), restart_ms + 300_000)]
        assert made.store.gaps[0][0] == round((T0 + 390) * 1000)
    else:
        assert made.store.gaps == []
    with override_settings(INGEST_DCGM_DIALECT=dialect):
        today = ingested(prometheus)
        stats = dict(push_reads.STATS)
        pushed = ingested(prometheus, url)
    assert pushed == today
    assert push_reads.STATS["failures"] == stats["failures"]
    # Points answered by the receiver (T0+300 on; with the restart, up to its gap), and runs
    # read from Prometheus around them (before T0+300: the receiver's first lookback; the gap).
    assert push_reads.STATS["pushed_steps"] > stats["pushed_steps"]
    assert push_reads.STATS["pulled_runs"] > stats["pulled_runs"]
