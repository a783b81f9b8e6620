"""The same simulated history in a real Prometheus and a real VictoriaMetrics, ingested
through both: every ingest data table must hold exactly the same rows.

One 6-node cluster with faults that make series vanish and come back (a node down, a
link flap, a pool flip) and counters move oddly (symbol errors, an XID, drift), at a
pinned epoch. Its 40-minute history (every family) is backfilled into Prometheus with
promtool and imported into VictoriaMetrics (``/api/v1/import/prometheus``, millisecond
timestamps). Ingest runs over the history and 5 minutes past its end (where every
series goes stale) through each backend with ``PROMETHEUS_FLAVOR=auto``; the tables are
compared after each run, the ids included (both runs start from RESTART IDENTITY).
docs/scaling.md "VictoriaMetrics" explains each difference this covers.

Every column must be equal to the last bit. (VictoriaMetrics stores a value as an int64
decimal mantissa and exponent, so an integer of 2**55 or more loses its low digits —
v1.79.5 lib/decimal/decimal.go getDecimalAndScale, docs/FAQ.md. No series ingest reads
gets there: NVLink bandwidth is DCGM's MB/s gauge, not a byte counter, and an IB data
counter needs ~8 days at 400 Gb/s; docs/scaling.md says so.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from django.apps import apps
from django.db import connection
from django.test.utils import override_settings

from ingest import prometheus as ingest_prometheus
from ingest.flavor import min_staleness_seconds
from ingest.models import GpuHotSample, IbHotSample
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import Cluster, ClusterSpec, Fault, FaultKind, write_history
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus
from tests.support.timeseries import TIMESERIES_TABLES
from tests.support.victoria import VictoriaMetricsProcess, require_victoria_metrics

pytestmark = pytest.mark.django_db(transaction=True)

#: Pinned: the end of the history, when the simulated exporters stop answering.
EPOCH = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HISTORY = timedelta(minutes=40)
STEP = 30
NODES = 6
#: Ingested past the history's end: every series goes stale there (Prometheus' lookback).
TAIL = timedelta(minutes=5)
#: Operational tables: wall-clock times and durations of the cycles, not data.
OPERATIONAL = {
    "ingest_ingestcursor",
    "ingest_shardcursor",
    "ingest_familyhealth",
    "ingest_ingestcycle",
    "ingest_prometheusoutage",
}
#: One table per family that must have rows.
STORED_BY_EVERY_FAMILY = (
    "ingest_gpustep",
    "ingest_ibencoded",
    "ingest_kueuesample",
    "ingest_node",
    "runs_pod",
    "runs_checkpoint",
    "ingest_ibport",
)
#: Shown per table on a failure.
FIRST_DIFFERENCES = 5


def faulty_cluster() -> Cluster:
    """6 nodes; a node down, a flapping link, symbol errors, an XID, drift, a pool flip."""
    names = [n.name for n in Cluster(ClusterSpec(nodes=NODES, seed=1, epoch=EPOCH)).nodes]
    inference = [
        n.name
        for n in Cluster(ClusterSpec(nodes=NODES, seed=1, epoch=EPOCH)).nodes
        if n.home_pool == "inference"
    ]
    w = lambda minutes: EPOCH + timedelta(minutes=minutes)  # noqa: E731
    k = FaultKind
    faults = [
        Fault(k.NODE_DOWN, w(-30), w(-21), nodes=[names[5]]),
        Fault(k.IB_LINK_FLAP, w(-35), w(-15), nodes=[names[2]], ports=[1], params={"flaps": 2}),
        Fault(k.IB_SYMBOL_ERRORS, w(-38), w(-10), nodes=[names[1]], ports=[2]),
        Fault(k.XID, w(-25), w(-5), nodes=[names[3]], gpus=[0], params={"code": 79}),
        Fault(k.TENSOR_DRIFT, w(-30), w(-2), nodes=[names[0]], gpus=[3]),
        Fault(k.POOL_FLIP, w(-28), w(-12), nodes=[inference[0]]),
    ]
    return Cluster(ClusterSpec(nodes=NODES, seed=1, epoch=EPOCH, faults=faults))


@dataclass(frozen=True)
class Backends:
    """The two running servers."""

    prometheus: PrometheusProcess
    victoria: VictoriaMetricsProcess


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backends]:
    """A Prometheus and a VictoriaMetrics holding the same history."""
    require_prometheus()
    require_victoria_metrics()
    workdir = Path(tmp_path_factory.mktemp("victoria"))
    history = workdir / "history.om"
    end = EPOCH.timestamp()
    write_history(faulty_cluster(), end - HISTORY.total_seconds(), end, STEP, history, "all")
    create_blocks(history, workdir / "tsdb")
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    prometheus = PrometheusProcess(config, workdir / "tsdb").start()
    try:
        with VictoriaMetricsProcess(workdir / "vm").running() as victoria:
            victoria.import_openmetrics(history)
            victoria.flush()
            history.unlink()
            yield Backends(prometheus, victoria)
    finally:
        prometheus.stop()


def data_tables() -> list[str]:
    """Every table ingest writes data into (dimensions, runs, time series, events, rollups)."""
    models = [
        *apps.get_app_config("ingest").get_models(),
        *apps.get_app_config("runs").get_models(),
    ]
    tables = {m._meta.db_table for m in models if not m._meta.proxy} | set(TIMESERIES_TABLES)
    views = {GpuHotSample._meta.db_table, IbHotSample._meta.db_table}  # each a view of two tables
    return sorted(tables - OPERATIONAL - views)


Rows = dict[tuple[object, ...], tuple[object, ...]]


def snapshot() -> dict[str, Rows]:
    """Per data table: its rows (a row → (), to show differences as set operations).

    first_seen / last_seen default to now but ingest sets them from the samples: compared too.
    """
    rows = {}
    with connection.cursor() as cursor:
        for table in data_tables():
            cursor.execute(f"SELECT * FROM {table} LIMIT 0")
            names = [c.name for c in cursor.description]
            quoted = ", ".join(f'"{n}"' for n in names)  # a column may be named "table"
            cursor.execute(f"SELECT {quoted} FROM {table}")
            fetched = [tuple(map(frozen, row)) for row in cursor.fetchall()]
            rows[table] = {row: () for row in fetched}
            assert len(rows[table]) == len(fetched), f"{table}: duplicate rows"
    return rows


def frozen(value: object) -> object:
    """A column value as something hashable (array and JSON columns come as lists, dicts)."""
    if isinstance(value, list):
        return tuple(map(frozen, value))
    if isinstance(value, dict):
        return tuple(sorted((k, frozen(v)) for k, v in value.items()))
    return value


def empty_data_tables() -> None:
    """TRUNCATE every table ingest writes (operational ones too: the cursors), ids restarted."""
    with connection.cursor() as cursor:
        tables = sorted(set(data_tables()) | OPERATIONAL)
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def ingest_through(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    """(detected flavour, each family's status) of ingesting the history through ``url``."""
    monkeypatch.setattr("ingest.services.utcnow", lambda: EPOCH + TAIL)
    start = EPOCH - HISTORY
    with override_settings(PROMETHEUS_FLAVOR="auto", INGEST_STEP_SECONDS=STEP):
        client = PrometheusClient(url, timeout=120)
        outcomes = ingest_all(since=start, until=EPOCH + TAIL, client=client)
        flavor = client.flavor()
    return flavor, [f"{o.family}:{o.status}:{o.error}" for o in outcomes]


def differences(expected: Rows, got: Rows) -> str:
    """The first rows only one side has, for the failure message."""
    only_prometheus = sorted(set(expected) - set(got), key=repr)[:FIRST_DIFFERENCES]
    only_victoria = sorted(set(got) - set(expected), key=repr)[:FIRST_DIFFERENCES]
    return f"\n  Prometheus only: {only_prometheus}\n  VictoriaMetrics only: {only_victoria}"


def test_victoriametrics_stores_exactly_what_prometheus_does(
    backends: Backends, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ingest_prometheus._FLAVORS.clear()
    caplog.set_level(logging.WARNING, logger="ingest.flavor")
    empty_data_tables()  # earlier tests' rows moved the id sequences on: both runs start at 1
    flavor, statuses = ingest_through(backends.prometheus.url, monkeypatch)
    assert flavor == "prometheus"
    assert all(s.endswith(":ok:") for s in statuses), statuses
    expected = snapshot()
    empty_data_tables()

    flavor, statuses = ingest_through(backends.victoria.url, monkeypatch)
    assert flavor == "victoriametrics"
    assert all(s.endswith(":ok:") for s in statuses), statuses
    got = snapshot()
    # Its /flags were read: 5m1s is Prometheus' lookback, so no warning.
    flags = requests.get(f"{backends.victoria.url}/flags", timeout=10).text
    assert min_staleness_seconds(flags) == 301.0
    assert caplog.messages == []

    assert set(got) == set(expected)
    mismatched = {
        table: f"{len(expected[table])} vs {len(got[table])} rows"
        + differences(expected[table], got[table])
        for table in expected
        if set(got[table]) != set(expected[table])
    }
    assert not mismatched, "\n".join(f"{t}: {d}" for t, d in mismatched.items())
    # Not vacuous: every family stored rows.
    assert sorted(t for t in STORED_BY_EVERY_FAMILY if not expected[t]) == []
