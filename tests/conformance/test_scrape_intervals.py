"""Issue 21, acceptance 1: the same cluster history scraped every 15, 30, 60 or 120 s (and a mix).

Each history is written by the simulator with its exporters sampled at their own intervals,
backfilled into its own real Prometheus, ingested at a 30 s step in two cycles of several
chunks (so a counter is carried across chunks in memory and across cycles from what is
stored), then replayed through the rules. The 30 s history is the reference: at 30 s its
stored rates are the exact increase over each step (the conformance tests check that).

* 15 s: every stored IB value equals the reference (the newest sample of each step is the one
  a 30 s scrape takes).
* 60 s / 120 s / the mix: each stored rate is the rate between the two samples the step lies
  between — the mean of the reference over those steps, to two float4 roundings — so never 0 then 2x; and
  within 1 % of the reference wherever the traffic is steady (within 0.5 %) over them (a
  scrape every 120 s cannot see what changed between its samples; nothing can).
* The firing alerts (rule + labels) are the same set at every interval, each first firing
  within one scrape interval (plus a replay step) of the reference's.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import override_settings

from alerts.models import Alert, Evaluation
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import Cluster, ClusterSpec
from simulator.history import write_history
from simulator.scenarios import with_scenario
from simulator.spec import Dialect
from tests.alerts.acceptance import empty_ingest_tables, replay
from tests.conformance.test_scenarios import fired
from tests.support.encodings import FLOAT4_PAIR_RTOL
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
EPOCH = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)  # pinned
NODES = 8
STEP = 30
HOUR = 3600.0
REPLAY_EVERY = 120.0
PINNED = {
    "INGEST_PROMETHEUS_RETENTION_DAYS": 100_000,
    "INGEST_RAW_RETENTION_DAYS": 100_000,
    "INGEST_STEP_SECONDS": STEP,
    "INGEST_CHUNK_STEPS": 25,  # several chunks per cycle: carried in memory between them
}
#: name → per-dialect scrape interval (seconds); "mix" as a real fleet might run.
INTERVALS: dict[str, dict[str, float]] = {
    "30s": dict.fromkeys(Dialect.ALL, 30.0),
    "15s": dict.fromkeys(Dialect.ALL, 15.0),
    "60s": dict.fromkeys(Dialect.ALL, 60.0),
    "120s": dict.fromkeys(Dialect.ALL, 120.0),
    "mix": {
        Dialect.DCGM: 15.0,
        Dialect.NODE_IB: 60.0,
        Dialect.TREYDOCK: 120.0,
        Dialect.KSM: 30.0,
        Dialect.KUEUE: 30.0,
        Dialect.CHECKPOINTS: 60.0,
    },
}
COLUMNS = ("tx_bytes", "rx_bytes", "xmit_wait", "symbol_errors")


def spec() -> ClusterSpec:
    """Every run at line rate, one port with symbol errors and one congested, mid-history."""
    base = with_scenario(ClusterSpec(nodes=NODES, seed=1, epoch=EPOCH), "busy_healthy")
    base = with_scenario(base, "ib_symbol_errors", EPOCH - timedelta(minutes=40))
    return with_scenario(base, "ib_congestion", EPOCH - timedelta(minutes=35))


def stored() -> dict[tuple[str, str, int, float], tuple]:
    """(node, device, port, unix ts) → the COLUMNS stored (IB samples)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT n.name, p.device, p.port, extract(epoch FROM s.ts), {', '.join(COLUMNS)} "  # noqa: S608
            "FROM ingest_ibhot s JOIN ingest_ibport p ON p.id = s.port_id "
            "JOIN ingest_node n ON n.id = s.node_id"
        )
        return {(n, d, p, float(ts)): tuple(values) for n, d, p, ts, *values in cursor.fetchall()}


def run_history(name: str, workdir: Path) -> tuple[dict, dict]:
    """(stored IB values, fired alerts) of the history sampled at INTERVALS[name]."""
    cluster = Cluster(spec())
    end = EPOCH.timestamp()
    start = end - HOUR
    om = workdir / "history.om"
    write_history(cluster, start, end, STEP, om, "key", INTERVALS[name])
    create_blocks(om, workdir / "tsdb")
    om.unlink()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n")
    prometheus = PrometheusProcess(config, workdir / "tsdb", retention="100y").start()
    try:
        client = PrometheusClient(prometheus.url, timeout=120)
        with override_settings(**PINNED):
            since = datetime.fromtimestamp(start, UTC)
            middle = datetime.fromtimestamp(start + HOUR / 2, UTC)
            ingest_all(since=since, until=middle, client=client)  # two cycles: the second
            ingest_all(until=datetime.fromtimestamp(end - STEP, UTC), client=client)
            values = stored()
            alerts = fired(replay(start + 600, end - STEP, REPLAY_EVERY))
        return values, alerts
    finally:
        prometheus.stop()
        Alert.objects.all().delete()
        Evaluation.objects.all().delete()
        empty_ingest_tables()


@pytest.fixture(scope="module")
def histories(
    tmp_path_factory: pytest.TempPathFactory, django_db_setup: None, django_db_blocker
) -> Iterator[dict[str, tuple[dict, dict]]]:  # noqa: ANN001
    require_prometheus()
    with django_db_blocker.unblock():
        yield {
            name: run_history(name, Path(tmp_path_factory.mktemp(f"scrape{name}")))
            for name in INTERVALS
        }


def pair_mean(reference: dict, key: tuple, interval: float, column: int) -> tuple[float, list]:
    """The reference mean over the steps between the two samples step ``key`` lies between."""
    node, device, port, ts = key
    newest = ts // interval * interval  # samples sit on multiples of their interval
    steps = [newest - interval + STEP * (i + 1) for i in range(int(interval // STEP))]
    values = [reference.get((node, device, port, t), (None,) * len(COLUMNS))[column] for t in steps]
    known = [v for v in values if v is not None]
    return (sum(known) / len(known) if len(known) == len(values) else float("nan")), known


def test_a_15_s_scrape_stores_exactly_what_a_30_s_scrape_stores(histories) -> None:  # noqa: ANN001
    reference, fifteen = histories["30s"][0], histories["15s"][0]
    assert len(reference) > NODES * 8 * 100  # rails of every node, most of the hour
    assert fifteen == reference


@pytest.mark.parametrize("name", ["60s", "120s", "mix"])
def test_slow_scrapes_store_the_rate_between_their_samples_on_every_step(histories, name) -> None:  # noqa: ANN001
    reference, values = histories["30s"][0], histories[name][0]
    interval = INTERVALS[name][Dialect.NODE_IB]
    exact = steady = compared = busy = 0
    wrong: list = []
    for key, row in values.items():
        for column, value in enumerate(row):
            expected, span = pair_mean(reference, key, interval, column)
            if value is None or expected != expected:  # a first step with nothing to carry
                continue
            compared += 1
            # Rates are kept as real: the stored value and the reference's are each rounded.
            if abs(value - expected) <= FLOAT4_PAIR_RTOL * max(abs(expected), 1.0):
                exact += 1
            else:
                wrong.append((key, COLUMNS[column], value, expected))
            truth = reference.get(key, (None,) * len(COLUMNS))[column]
            busy += bool(truth)
            # Steady: the traffic over the two samples' span and at the step itself agree.
            if truth and max(*span, truth) <= min(*span, truth) * 1.005:
                steady += 1
                assert abs(value - truth) <= 0.01 * truth, (key, COLUMNS[column], value, truth)
    assert wrong[:5] == []
    assert exact == compared
    assert compared >= 0.95 * sum(v is not None for row in reference.values() for v in row)
    assert steady >= 0.3 * busy  # the 1 % check is not vacuous


def test_the_alert_set_is_the_same_at_every_scrape_interval(histories) -> None:  # noqa: ANN001
    reference = histories["30s"][1]
    rules = sorted({rule for rule, _labels in reference})
    assert rules == ["ib_congestion", "ib_port_errors"]
    for name, (_values, alerts) in histories.items():
        assert sorted(alerts) == sorted(reference), name
        slowest = max(INTERVALS[name].values())
        for key, (first, _resolved) in alerts.items():
            assert abs(first - reference[key][0]) <= slowest + REPLAY_EVERY, (name, key)


def test_coverage_shows_each_jobs_interval_measured_from_its_samples(tmp_path: Path) -> None:
    require_prometheus()
    from ingest.coverage import collect

    end = EPOCH.timestamp()
    cluster = Cluster(ClusterSpec(nodes=2, seed=1, epoch=EPOCH))
    om = tmp_path / "history.om"
    write_history(cluster, end - 900, end, STEP, om, "key", INTERVALS["mix"])
    create_blocks(om, tmp_path / "tsdb")
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1h\n")
    prometheus = PrometheusProcess(config, tmp_path / "tsdb", retention="100y").start()
    try:
        with override_settings(INGEST_MAX_SCRAPE_INTERVAL_SECONDS=100):
            report = collect(PrometheusClient(prometheus.url), datetime.fromtimestamp(end, UTC))
    finally:
        prometheus.stop()
    intervals = {
        f.family: [(i.job, i.seconds) for i in f.scrape_intervals] for f in report.families
    }
    assert intervals == {
        "gpu": [("dcgm-exporter", 15.0)],
        "ib": [("node-exporter", 60.0)],
        "topology": [("infiniband-exporter", 120.0)],
        "kueue": [("kueue", 30.0)],
        "cluster": [("kube-state-metrics", 30.0)],
        "runs": [("kube-state-metrics", 30.0)],
        "checkpoints": [("training-checkpoints", 60.0)],
    }
    topology = next(f for f in report.families if f.family == "topology")
    assert [n for n in topology.notes if "scraped every" in n] == [
        "infiniband-exporter is scraped every 120 s, more than "
        "INGEST_MAX_SCRAPE_INTERVAL_SECONDS=100: a step more than 100 s after its sample is "
        "stored as a gap. Raise INGEST_MAX_SCRAPE_INTERVAL_SECONDS to 120 or scrape it more often."
    ]
    assert [
        n for f in report.families if f.family != "topology" for n in f.notes if "every" in n
    ] == []
