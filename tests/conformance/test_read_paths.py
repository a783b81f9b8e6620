"""Remote read stores what query_range stores: every family and dialect, through a real Prometheus.

One simulated cluster per dcgm-exporter dialect (2 nodes, both IB dialects, every other
family) in one Prometheus each, started once per module. Its history lies in blocks for the
first five minutes (promtool) and in the head after (remote write), and holds what a live
Prometheus sees:

* node ``gpu-002`` down for 90 s (``node_down``): its targets answer nothing, so each of
  their series gets a staleness marker at the first failed scrape, as a live scrape writes
  it; it comes back with its counters restarted from zero;
* node ``gpu-001`` rebooted between two scrapes (down for 5 s): its counters reset with no
  gap in its samples, so ingest sees the drop;
* a Prometheus restart: samples up to RESTART are written, Prometheus is stopped and started
  on the same TSDB (the head replayed from its WAL), no scrape happens for a minute, then the
  rest is written.

Ingest then runs over the whole window twice, once per PROMETHEUS_READ_PATH, and every row
of every table it writes must be the same.
"""

from __future__ import annotations

import math
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

from ingest.models import IngestCursor, ShardCursor
from ingest.sources import base
from simulator import Cluster, ClusterSpec, ExporterOptions, write_history
from simulator.faults import Fault, FaultKind
from tests.conformance.scrapes import RETENTION_DAYS, T0, ingest
from tests.support.encodings import float4
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus
from tests.support.remote_write import STALE_NAN, SeriesKey, remote_write, series_of
from tests.support.timeseries import TIMESERIES_TABLES, truncate_timeseries

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
STEP = 30
HEAD_FROM, RESTART, BACK, END = T0 + 300, T0 + 510, T0 + 570, T0 + 660
DOWN = (T0 + 390, T0 + 480)  # gpu-002's exporters do not answer
REBOOT = T0 + 395  # gpu-001 restarts (5 s): its counters at T0+420 count from T0+400
SINCE, UNTIL = T0 + 60, T0 + 630  # ingested steps: T0+90 … T0+630
FAMILIES = ["gpu", "ib", "kueue", "cluster", "runs", "checkpoints"]
#: Tables compared beside the time series (their ids are the same: nodes and ports persist).
TABLES = (*TIMESERIES_TABLES, "ingest_xidevent", "ingest_node", "ingest_ibport")
Samples = dict[SeriesKey, list[tuple[int, float]]]


def with_stale_markers(series: Samples, end_ms: int) -> Samples:
    """Each series with a staleness marker where its target stopped answering: one step after
    a sample followed by a gap, or by nothing before ``end_ms`` (a live scrape's markers)."""
    step_ms = STEP * 1000
    marked: Samples = {}
    for key, samples in series.items():
        out: list[tuple[int, float]] = []
        for (t, value), following in zip(samples, [*samples[1:], None], strict=True):
            out.append((t, value))
            gone = following is None and t + step_ms < end_ms
            if gone or (following is not None and following[0] - t > step_ms):
                out.append((t + step_ms, STALE_NAN))
        marked[key] = out
    return marked


def between(series: Samples, start: float, end: float) -> Samples:
    """The samples ``start <= t < end`` (unix seconds) of each series that has some."""
    low, high = start * 1000, end * 1000
    kept = {key: [s for s in samples if low <= s[0] < high] for key, samples in series.items()}
    return {key: samples for key, samples in kept.items() if samples}


def blocks_file(series: Samples, path: Path) -> None:
    """OpenMetrics of ``series`` for promtool (labels as written, values as Go floats)."""
    lines = []
    for key, samples in series.items():
        name, labels = key[0][1], ",".join(f'{k}="{v}"' for k, v in key[1:])
        lines += [f"{name}{{{labels}}} {value!r} {t / 1000:.0f}" for t, value in samples]
    path.write_text("\n".join([*lines, "# EOF", ""]))


def cluster_series(workdir: Path, legacy: bool) -> Samples:
    """The simulated cluster's series over [T0, END] (module docstring), staleness markers in."""
    require_prometheus()
    epoch = datetime.fromtimestamp(T0, UTC)
    faults = [
        Fault(FaultKind.NODE_DOWN, DOWN[0] - T0, DOWN[1] - T0, nodes=["gpu-002"]),
        Fault(FaultKind.NODE_DOWN, REBOOT - T0, REBOOT + 5 - T0, nodes=["gpu-001"]),
    ]
    exporters = ExporterOptions(dcgm_legacy=legacy)
    spec = ClusterSpec(nodes=2, seed=3, epoch=epoch, faults=faults, exporters=exporters)
    cluster = Cluster(spec)
    write_history(cluster, T0, END, float(STEP), workdir / "history.om", "all")
    return with_stale_markers(series_of(workdir / "history.om"), round(END * 1000))


def prometheus_holding(workdir: Path, series: Samples) -> Iterator[PrometheusProcess]:
    """A Prometheus with ``series`` in blocks, then in the head across a restart."""
    blocks_file(between(series, T0, HEAD_FROM), workdir / "blocks.om")
    tsdb = workdir / "tsdb"
    create_blocks(workdir / "blocks.om", tsdb)
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    prometheus = PrometheusProcess(
        config, tsdb, retention=f"{RETENTION_DAYS}d", extra_args=("--web.enable-remote-write-receiver",)
    )  # fmt: skip
    prometheus.start()
    try:
        remote_write(prometheus.url, between(series, HEAD_FROM, RESTART))
        prometheus.stop()
        prometheus.start()  # the head comes back from the WAL
        remote_write(prometheus.url, between(series, BACK, END))
        yield prometheus
    finally:
        prometheus.stop()


def live_history(workdir: Path, legacy: bool) -> Iterator[PrometheusProcess]:
    """The cluster's history in blocks, then in the head across a restart (module docstring)."""
    yield from prometheus_holding(workdir, cluster_series(workdir, legacy))


@pytest.fixture(scope="module", params=["current", "legacy"])
def dialect_history(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, PrometheusProcess]]:
    workdir = tmp_path_factory.mktemp(f"read_paths_{request.param}")
    for prometheus in live_history(workdir, legacy=request.param == "legacy"):
        yield request.param, prometheus


def stored_rows() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every compared table, without its id, sorted (NaN as a string)."""
    rows = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT * FROM {table}")
            names = [column.name for column in cursor.description]
            kept = [i for i, name in enumerate(names) if name != "id"]
            rows[table] = sorted(
                (tuple(_comparable(row[i]) for i in kept) for row in cursor.fetchall()), key=repr
            )
    return rows


def _comparable(value: object) -> object:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


def requests_to(prometheus: PrometheusProcess, handler: str) -> float:
    """How many requests Prometheus has served on ``handler`` (its own /metrics)."""
    with urllib.request.urlopen(f"{prometheus.url}/metrics", timeout=10) as response:
        text = response.read().decode()
    mark = f'handler="{handler}"'
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("prometheus_http_requests_total{") and mark in line
    )


def start_over() -> None:
    """Nothing ingested yet: no rows, no XID events, no cursors."""
    truncate_timeseries()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM ingest_xidevent")
    IngestCursor.objects.all().delete()
    ShardCursor.objects.all().delete()


def ingested_through(prometheus: PrometheusProcess, path: str) -> dict[str, list[tuple]]:
    """What one ingest of every family over (SINCE, UNTIL] stores under ``path``."""
    start_over()
    with override_settings(PROMETHEUS_READ_PATH=path):
        ingest(prometheus, FAMILIES, SINCE, UNTIL)
    return stored_rows()


def stored_rate(node: str, device: str, ts: float) -> float | None:
    """The stored transmit rate (bytes/s) of ``node``'s ``device`` port 1 at ``ts``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.tx_bytes FROM ingest_ibhot s JOIN ingest_ibport p ON p.id = s.port_id "
            "JOIN ingest_node n ON n.id = p.node_id "
            "WHERE n.name = %s AND p.device = %s AND p.port = 1 AND s.ts = %s",
            [node, device, datetime.fromtimestamp(ts, UTC)],
        )
        found = cursor.fetchall()
        return found[0][0] if found else None


def gpu_steps(node: str) -> list[float]:
    """The steps with a stored GPU row of ``node``."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT extract(epoch FROM s.ts) FROM ingest_gpuhot s "
            "JOIN ingest_node n ON n.id = s.node_id WHERE n.name = %s ORDER BY 1",
            [node],
        )
        return [float(row[0]) for row in cursor.fetchall()]


def test_remote_read_stores_what_query_range_stores(
    dialect_history: tuple[str, PrometheusProcess],
) -> None:
    dialect, prometheus = dialect_history
    with override_settings(INGEST_DCGM_DIALECT=dialect):
        reads = requests_to(prometheus, "/api/v1/read")
        today = ingested_through(prometheus, "query_range")
        assert requests_to(prometheus, "/api/v1/read") == reads
        raw = ingested_through(prometheus, "remote_read")
        assert requests_to(prometheus, "/api/v1/read") > reads
    assert raw == today
    # The reset: gpu-001's port counter dropped at T0+420; its rate there is the new value / 30 s.
    counter = (
        'node_infiniband_port_data_transmitted_bytes_total{instance="10.0.0.1:9100",'
        'device="mlx5_0",port="1"}'
    )
    before, after = (prometheus.scalar(counter, at=ts) for ts in (T0 + 390, T0 + 420))
    assert before is not None and after is not None and after < before
    assert stored_rate("gpu-001", "mlx5_0", T0 + 420) == float4(after / STEP)  # kept as real
    steps = [T0 + 90 + STEP * i for i in range(19)]
    restart_gap = {T0 + 510, T0 + 540}
    down_gap = {T0 + 390, T0 + 420, T0 + 450}
    assert gpu_steps("gpu-001") == [ts for ts in steps if ts not in restart_gap]
    # gpu-002's last two samples before the restart were 120 s apart (it was down): ingest
    # takes that as its scrape interval and carries the T0+480 sample across the restart.
    assert gpu_steps("gpu-002") == [ts for ts in steps if ts not in down_gap]


def ingested_in_cycles(prometheus: PrometheusProcess, steps: int) -> dict[str, list[tuple]]:
    """What ingest stores over (SINCE, UNTIL] in cycles of ``steps`` steps each, as a worker
    whose INGEST_INTERVAL_SECONDS is ``steps`` x INGEST_STEP_SECONDS runs them (the sampling
    context kept from one cycle to the next, as in one worker process)."""
    start_over()
    base.forget_sampling()
    ends = [*range(int(SINCE) + STEP * steps, int(UNTIL), STEP * steps), UNTIL]
    for since, until in zip([SINCE, *ends], ends, strict=False):
        ingest(prometheus, FAMILIES, since, until)
    return stored_rows()


def test_reading_every_2_or_4_steps_stores_what_reading_every_step_stores(
    dialect_history: tuple[str, PrometheusProcess],
) -> None:
    """A longer ingest interval at the same step (docs/scaling.md "Reading less often") changes
    when rows are written, never which: node down, reboot and Prometheus restart included."""
    dialect, prometheus = dialect_history
    with override_settings(INGEST_DCGM_DIALECT=dialect, PROMETHEUS_READ_PATH="query_range"):
        every = ingested_in_cycles(prometheus, 1)
        # a step row per node (8 GPUs) and step it answered: gpu-001 17 steps, gpu-002 16
        assert len(every["ingest_gpustep"]) == 17 + 16
        for rows in (
            ingested_in_cycles(prometheus, 2),
            ingested_in_cycles(prometheus, 4),
            ingested_through(prometheus, "query_range"),  # one catch-up window
        ):
            assert {t: r for t, r in rows.items() if t not in DERIVED} == {
                t: r for t, r in every.items() if t not in DERIVED
            }
            for table in DERIVED:
                assert alike(rows[table], every[table]), table


#: Means over the stored samples: a bucket refreshed by several cycles sums its rows in
#: another order than one refresh does, so they may differ in the last bits of a float8.
DERIVED = (
    "ingest_gpurollup",
    "ingest_ibrollup",
    "ingest_noderollup",
    "ingest_heatmaptile",
    "ingest_nodetile",
)


def alike(a: object, b: object) -> bool:
    """``a`` and ``b`` equal, their floats (in rows, nested lists) to 1e-12 relatively."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(alike(x, y) for x, y in zip(a, b, strict=True))
    return a == b
