"""treydock/infiniband_exporter as it really emits, alone and beside node_exporter, into ingest.

Fixtures: ib_treydock_hca.prom (--collector.hca: hca_test.go's "o0001 HCA-1"/"o0002 HCA-1",
test2.out's rdma-core-named "worker20 mlx5_3" and SHARP's "Mellanox Technologies Aggregation
Node"), ib_treydock_switch_only.prom (default flags: the HCA collector is off) and
ib_node_exporter_worker20.prom (node_exporter on worker20, lacking some counter files).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command

from alerts.models import Alert
from alerts.services import evaluate
from ingest.coverage import collect
from ingest.models import IbHotSample, IbPort, Node
from ingest.normalize import HcaName, split_hca
from ingest.prometheus import PrometheusClient
from ingest.selectors import latest_per_node
from tests.conformance.ib_history import (
    EPOCH,
    FIXTURES,
    STEP,
    at,
    backfilled,
    by_series,
    go_float,
    ingest_fixture_history,
    openmetrics,
    parse,
)
from tests.support.prometheus import PrometheusProcess

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
SCRAPES = 5
O1, O2, W20, AGG = (
    "0x7cfe9003003b4bde",
    "0x7cfe9003003b4b96",
    "0xb83fd20300da1138",
    "0x946dae0300630bfe",
)
HCA = "infiniband_hca_port_"
TREYDOCK_DELTAS = {
    (HCA + "transmit_data_bytes_total", O1, "1"): 3.0e9,
    (HCA + "receive_data_bytes_total", O1, "1"): 1.5e9,
    (HCA + "transmit_packets_total", O1, "1"): 7.5e5,
    (HCA + "transmit_data_bytes_total", W20, "1"): 30.0e9,
    (HCA + "symbol_error_total", W20, "1"): 1.0,
    (HCA + "transmit_data_bytes_total", AGG, "1"): 3.0e3,
}
LINK_DOWN = {(HCA + "link_downed_total", O1, "1"): (2, 1.0)}  # o0001's link went down once
WORKER20_DELTAS = {("node_infiniband_port_data_transmitted_bytes_total", "mlx5_3", "1"): 60.0e9}


def treydock_history(name: str) -> list[str]:
    grown = by_series(TREYDOCK_DELTAS, key="guid", jumps=LINK_DOWN)
    return openmetrics(FIXTURES / name, "infiniband", "ib-mgmt:9315", SCRAPES, grown)


@pytest.fixture(scope="module")
def treydock_alone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    with backfilled(tmp_path_factory.mktemp("td"), treydock_history("ib_treydock_hca.prom")) as p:
        yield p


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    node = openmetrics(
        FIXTURES / "ib_node_exporter_worker20.prom",
        "node",
        "worker20:9100",
        SCRAPES,
        by_series(WORKER20_DELTAS),
    )
    history = treydock_history("ib_treydock_hca.prom")
    with backfilled(tmp_path_factory.mktemp("both"), history, node) as p:
        yield p


@pytest.fixture(scope="module")
def switches_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    history = treydock_history("ib_treydock_switch_only.prom")
    with backfilled(tmp_path_factory.mktemp("sw"), history) as p:
        yield p


def sample(node: str, device: str, k: int) -> IbHotSample:
    return IbHotSample.objects.get(
        port__node__name=node, port__device=device, port__port=1, ts=at(EPOCH + k * STEP)
    )


def row(s: IbHotSample) -> tuple:
    return (
        s.tx_bytes, s.rx_bytes, s.tx_packets, s.xmit_wait, s.symbol_errors, s.link_downed,
        s.local_link_integrity, s.rate, s.state, s.phys_state, s.saturated,
    )  # fmt: skip


def test_both_node_description_forms_and_skipped_cas() -> None:
    assert [split_hca(h) for h in ("o0001 HCA-1", "worker20 mlx5_3")] == [
        HcaName("o0001", "mlx5_0"),
        HcaName("worker20", "mlx5_3"),  # rdma-core's "host mlx5_N": NOT mlx5_2
    ]
    skips = {split_hca(h).skip for h in ("Mellanox Technologies Aggregation Node", "x y z", "")}
    assert skips == {"sharp_aggregation_node", "unrecognised_node_description", "no_hca_info"}


def test_fixture_lines_are_in_treydocks_format() -> None:
    for name in ("ib_treydock_hca.prom", "ib_treydock_switch_only.prom"):
        samples = parse(FIXTURES / name)
        assert [s.name for s in samples] == sorted(s.name for s in samples)
        for s in samples:
            keys = [k for k, _ in s.labels]
            assert keys == sorted(keys), s  # client_golang writes labels sorted by name
            assert s.text == go_float(s.value), s
    names = {s.name for s in parse(FIXTURES / "ib_treydock_hca.prom")}
    assert "infiniband_hca_rate_bytes_per_second" in names
    assert not {n for n in names if "state" in n}  # treydock has no HCA port state series


def test_treydock_ports_nodes_values_and_leaves(
    treydock_alone: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = ingest_fixture_history(
        treydock_alone, settings, monkeypatch, SCRAPES, ["ib", "topology"]
    )
    assert set(IbPort.objects.values_list("node__name", "device", "port", "guid", "leaf_switch", "switch_port")) == {
        ("o0001", "mlx5_0", 1, O1, "ib-i1l1s01", "10"),
        ("o0002", "mlx5_0", 1, O2, "ib-i1l1s01", "11"),
        ("worker20", "mlx5_3", 1, W20, "5FB0405-leaf-IB01", "79"),
    }  # fmt: skip
    assert set(Node.objects.values_list("name", "leaf_switch")) == {
        ("o0001", "ib-i1l1s01"),
        ("o0002", "ib-i1l1s01"),
        ("worker20", "5FB0405-leaf-IB01"),
    }  # no "Mellanox" node
    ib, topology = outcomes
    assert "skipped treydock CAs sharp_aggregation_node=1" in ib.notes
    assert "ports without port state (treydock exports none): 3" in ib.notes
    assert "skipped CAs sharp_aggregation_node=1" in topology.notes
    # rate from infiniband_hca_rate_bytes_per_second{guid}; state/phys_state unknown (NULL).
    assert row(sample("o0001", "mlx5_0", 1)) == (
        1.0e8, 5.0e7, 2.5e4, 0.0, 0.0, 0.0, 0.0, 1.25e10, None, None, 0
    )  # fmt: skip
    assert row(sample("o0001", "mlx5_0", 2)) == (
        1.0e8, 5.0e7, 2.5e4, 0.0, 0.0, 1.0, 0.0, 1.25e10, None, None, 0
    )  # fmt: skip
    assert row(sample("worker20", "mlx5_3", 3)) == (
        1.0e9, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.5e10, None, None, 0
    )  # fmt: skip


def test_a_flap_without_port_state_comes_from_link_downed(
    treydock_alone: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_fixture_history(treydock_alone, settings, monkeypatch, SCRAPES, ["ib", "topology"])
    evaluate(now=EPOCH + (SCRAPES - 1) * STEP)
    found = {
        (a.rule, a.labels.get("node"), a.labels.get("device"), a.labels.get("leaf_switch"), a.state)
        for a in Alert.objects.all()
    }
    assert found == {("ib_link_flap", "o0001", "mlx5_0", "ib-i1l1s01", "firing")}


def test_both_exporters_make_one_port_model(
    both: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcomes = ingest_fixture_history(both, settings, monkeypatch, SCRAPES, ["ib"])
    assert set(IbPort.objects.values_list("node__name", "device", "port", "guid")) == {
        ("o0001", "mlx5_0", 1, O1),  # treydock only: not dropped
        ("o0002", "mlx5_0", 1, O2),
        ("worker20", "mlx5_3", 1, W20),  # one port, seen by both
    }
    assert "dialect=node_exporter+treydock" in outcomes[0].notes
    # tx_bytes (2e9 B/s) and state from node_exporter; symbol_error (no sysfs file on this
    # port) from treydock; local_link_integrity from treydock too.
    assert row(sample("worker20", "mlx5_3", 3)) == (
        2.0e9, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.5e10, 4, 5, 0
    )  # fmt: skip
    assert sample("o0002", "mlx5_0", 3).state is None
    latest = latest_per_node(at(EPOCH + (SCRAPES - 1) * STEP))
    # o0002's state is unknown (treydock only): no "0 active ports".
    assert (latest["worker20"].active_ports, latest["o0002"].active_ports) == (1, None)


def test_forcing_one_dialect_reads_only_it(
    both: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest_fixture_history(both, settings, monkeypatch, SCRAPES, ["ib"], dialect="node_exporter")
    assert set(IbPort.objects.values_list("node__name", "device", "guid")) == {
        ("worker20", "mlx5_3", "")
    }
    assert sample("worker20", "mlx5_3", 3).symbol_errors is None


def test_coverage_names_the_disabled_hca_collector(switches_only: PrometheusProcess) -> None:
    out = StringIO()
    call_command("coverage", "--url", switches_only.url, "--json", stdout=out)
    ib = next(f for f in json.loads(out.getvalue())["families"] if f["family"] == "ib")
    assert ib["status"] == "missing"
    assert ib["cause"].startswith("treydock HCA collector disabled (--collector.hca)")
    assert "not deployed" not in ib["cause"]
    assert (
        ib["fix"]
        == "Start infiniband_exporter with --collector.hca (and keep the switch collector)."
    )


def test_coverage_counts_the_non_host_cas(treydock_alone: PrometheusProcess) -> None:
    # At the history's time (the command asks at "now", long after the backfilled scrapes).
    report = collect(PrometheusClient(treydock_alone.url), at=at(EPOCH + 2 * STEP))
    ib = next(f for f in report.families if f.family == "ib")
    assert ib.dialect == "treydock infiniband_exporter"
    assert [n for n in ib.notes if "not host ports" in n] == [
        "1 treydock CA(s) are not host ports (e.g. SHARP's \"Mellanox Technologies Aggregation "
        'Node", or a node description that is neither "<host> HCA-<N>" nor "<host> mlx5_<N>"): '
        "skipped, never made nodes."
    ]


def test_sharded_ingest_merges_the_same_and_drops_no_treydock_node(
    both: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ingest import services, shards

    settings.INGEST_STEP_SECONDS, settings.INGEST_IB_DIALECT = STEP, "auto"
    settings.INGEST_INITIAL_LOOKBACK_SECONDS = (SCRAPES - 1) * STEP
    monkeypatch.setattr(services, "utcnow", lambda: at(EPOCH + 3600))
    client = PrometheusClient(both.url)
    orders = shards.plan_orders("ib", client, at(EPOCH + (SCRAPES - 1) * STEP), 4)
    assert len(orders) == 4 and sum(len(o["values"]) for o in orders) == 1  # worker20 only
    assert [shards.ingest_shard(o, client).status for o in orders] == ["ok"] * 4
    assert set(IbPort.objects.values_list("node__name", "device", "port", "guid")) == {
        ("o0001", "mlx5_0", 1, O1),
        ("o0002", "mlx5_0", 1, O2),
        ("worker20", "mlx5_3", 1, W20),
    }
    assert row(sample("worker20", "mlx5_3", 3)) == (
        2.0e9, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 2.5e10, 4, 5, 0
    )  # fmt: skip
    assert IbHotSample.objects.count() == 3 * (SCRAPES - 1)  # each port's steps exactly once
