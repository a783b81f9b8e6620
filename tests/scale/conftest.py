"""Scale tests: a small simulated cluster behind a real Prometheus, and row dumps to compare ingests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import override_settings

from simulator import Dialect, ExporterOptions
from tests.ingest.simulated import small_cluster
from tests.support.prometheus import SimulatedPrometheus, require_prometheus, simulated_prometheus
from tests.support.timeseries import truncate_timeseries

STEP = 30
HISTORY = timedelta(minutes=30)
NODES = 8
#: Settings shared by the test process and its workers: a 20-minute first window, small chunks.
INGEST_ENV = {
    "INGEST_STEP_SECONDS": str(STEP),
    "INGEST_INITIAL_LOOKBACK_SECONDS": "1200",
    "INGEST_CHUNK_STEPS": "8",
}
FAMILIES = ["gpu", "ib"]


@pytest.fixture(scope="module")
def sharded_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedPrometheus]:
    """8 nodes (dcgm + node_exporter IB), 30 min of every family's history, an XID and a pegged counter."""
    require_prometheus()
    end = float(int(time.time() // STEP) * STEP)
    # kube-state-metrics too: the exporters run as pods and shards group series by resolved node.
    options = ExporterOptions(dialects=frozenset({Dialect.DCGM, Dialect.NODE_IB, Dialect.KSM}))
    cluster = small_cluster(options, end, nodes=NODES)
    workdir = tmp_path_factory.mktemp("sharded-prometheus")
    with simulated_prometheus(cluster, workdir, HISTORY, STEP, "2s", "all", end) as prom:
        yield prom


@pytest.fixture
def ingest_settings(sharded_prometheus: SimulatedPrometheus) -> Iterator[None]:
    """The test process ingests from the simulated Prometheus with INGEST_ENV's settings."""
    values = {key: int(value) for key, value in INGEST_ENV.items()}
    with override_settings(PROMETHEUS_URL=sharded_prometheus.prometheus.url, **values):
        yield


def history_point(prom: SimulatedPrometheus, seconds_before_end: int) -> datetime:
    """A step-aligned instant inside the backfilled history."""
    return datetime.fromtimestamp(prom.end - seconds_before_end, UTC)


GPU_ROWS = """
    SELECT n.name, s.gpu, s.ts, s.util, s.tensor, s.power, s.temp, s.nvlink_bw, s.nvlink_crc_flit
    FROM ingest_gpuhot s JOIN ingest_node n ON n.id = s.node_id ORDER BY 1, 2, 3
"""
IB_ROWS = """
    SELECT n.name, p.device, p.port, s.ts, s.tx_bytes, s.xmit_wait, s.symbol_errors, s.state,
           s.saturated
    FROM ingest_ibhot s JOIN ingest_ibport p ON p.id = s.port_id
    JOIN ingest_node n ON n.id = s.node_id ORDER BY 1, 2, 3, 4
"""
XID_ROWS = """
    SELECT n.name, x.gpu, x.ts, x.code FROM ingest_xidevent x JOIN ingest_node n ON n.id = x.node_id
    ORDER BY 1, 2, 3
"""
ROLLUP_ROWS = """
    SELECT 'gpu', n.name, r.gpu, r.ts, round(r.util::numeric, 6) FROM ingest_gpurollup r
    JOIN ingest_node n ON n.id = r.node_id ORDER BY 2, 3, 4
"""


def dump_rows() -> dict[str, list[tuple[object, ...]]]:
    """Every stored GPU / IB / XID / rollup row, keyed by names (ids differ between ingests)."""
    dumped = {}
    with connection.cursor() as cursor:
        for name, sql in (
            ("gpu", GPU_ROWS),
            ("ib", IB_ROWS),
            ("xid", XID_ROWS),
            ("rollup", ROLLUP_ROWS),
        ):
            cursor.execute(sql)
            dumped[name] = cursor.fetchall()
    return dumped


def forget_ingest() -> None:
    """Empty the time series, XID events and every cursor (a fresh start for a second ingest)."""
    from ingest.models import IngestCursor, ShardCursor, XidEvent

    truncate_timeseries()
    XidEvent.objects.all().delete()
    IngestCursor.objects.all().delete()
    ShardCursor.objects.all().delete()
