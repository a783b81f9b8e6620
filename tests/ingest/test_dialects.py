"""Exact stored values against a real Prometheus with simulator history, in every dialect."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from ingest.models import IbHotSample, IbPort, Node, XidEvent
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import Dialect
from tests.ingest.simulated import STEP, variant
from tests.support.encodings import float4
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.django_db(transaction=True),
]
# With kube-state-metrics the exporters run as pods (pod-named Hostname, IP instances) and
# ingest maps them to nodes; "hostname+treydock" is bare metal (labels taken as they are).
VARIANTS = {
    "Hostname+node_exporter": {"dcgm_node_label": "Hostname", "dialects": (Dialect.DCGM, Dialect.NODE_IB, Dialect.TREYDOCK, Dialect.KSM)},
    "hostname+treydock": {"dcgm_node_label": "hostname", "dialects": (Dialect.DCGM, Dialect.TREYDOCK)},
    "legacy+node_exporter": {"dcgm_legacy": True, "dialects": (Dialect.DCGM, Dialect.NODE_IB, Dialect.KSM)},
}  # fmt: skip


@pytest.fixture(scope="module", params=list(VARIANTS))
def prom(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SimulatedPrometheus]:
    with variant(
        tmp_path_factory.mktemp(request.param.replace("+", "_")), **dict(VARIANTS[request.param])
    ) as p:
        p.variant = request.param  # type: ignore[attr-defined]
        yield p


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def ingest_history(prom: SimulatedPrometheus, minutes: int = 30) -> None:
    outcomes = ingest_all(
        since=at(prom.end - minutes * 60),
        until=at(prom.end - STEP),
        client=PrometheusClient(prom.prometheus.url),
        families=["gpu", "ib", "topology"],
    )
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"], [o.error for o in outcomes]


def raw(prom: SimulatedPrometheus, selector: str, ts: float) -> float:
    # Backfilled history has no staleness markers: when a GPU's pod label changed in the
    # last 5 minutes, two series answer; ingest keeps the max per GPU, and so does this.
    value = prom.scalar(f"max({selector})", at=ts)
    assert value is not None, selector
    return value


def test_gpu_values_are_stored_exactly(prom: SimulatedPrometheus, settings) -> None:
    ingest_history(prom)
    node = prom.cluster.nodes[2].name
    ts = prom.end - 10 * 60
    legacy = prom.variant.startswith("legacy")  # type: ignore[attr-defined]
    label = (
        "instance"
        if legacy
        else ("hostname" if prom.variant.startswith("hostname") else "Hostname")
    )  # type: ignore[attr-defined]
    host = prom.instance(node, "dcgm") if legacy else prom.hostname(node)
    util = "dcgm_gpu_utilization" if legacy else "DCGM_FI_DEV_GPU_UTIL"
    power = "dcgm_power_usage" if legacy else "DCGM_FI_DEV_POWER_USAGE"
    sample = Node.objects.get(name=node).gpuhotsample_set.get(gpu=3, ts=at(ts))
    assert sample.util == raw(prom, f'{util}{{{label}="{host}",gpu="3"}}', ts)
    # Power is kept to the milliwatt, NVML's resolution (docs/scaling.md, precision table).
    assert sample.power == round(raw(prom, f'{power}{{{label}="{host}",gpu="3"}}', ts), 3)
    assert (
        Node.objects.get(name=node).gpuhotsample_set.filter(gpu=3).count() == 59
    )  # 30 min = 60 steps − the last


def test_xid_is_one_event_at_its_time(prom: SimulatedPrometheus) -> None:
    ingest_history(prom)
    node = prom.cluster.nodes[0].name
    assert list(XidEvent.objects.values_list("node__name", "gpu", "code", "ts")) == [
        (node, 2, 79, at(prom.end - 20 * 60))
    ]


def test_ib_values_are_stored_exactly(prom: SimulatedPrometheus) -> None:
    ingest_history(prom)
    node = prom.cluster.nodes[2].name
    ts = prom.end - 10 * 60
    treydock = "treydock" in prom.variant  # type: ignore[attr-defined]
    port = IbPort.objects.get(node__name=node, device="mlx5_3", port=1)
    sample = IbHotSample.objects.get(port=port, ts=at(ts))
    if treydock:
        selector = f'infiniband_hca_port_transmit_data_bytes_total{{guid="{port.guid}",port="1"}}'
    else:
        selector = f'node_infiniband_port_data_transmitted_bytes_total{{instance="{prom.instance(node, "node_ib")}",device="mlx5_3"}}'
    expected = (raw(prom, selector, ts) - raw(prom, selector, ts - STEP)) / STEP
    assert sample.tx_bytes == float4(expected)  # rates are kept as real (docs/scaling.md)
    # node_exporter also lists the dual-port storage HCA (mlx5_8 ports 1-2); its i40iw0 has no
    # counter and is no IB port; treydock sees the 8 rail ports (its aggregation nodes skipped).
    ports = set(IbPort.objects.filter(node__name=node).values_list("device", "port"))
    rails = {(f"mlx5_{i}", 1) for i in range(8)}
    assert ports == (rails if treydock else rails | {("mlx5_8", 1), ("mlx5_8", 2)})
    assert not Node.objects.filter(name__startswith="Mellanox").exists()


def test_saturated_counter_is_flagged_and_null(prom: SimulatedPrometheus) -> None:
    ingest_history(prom)
    port = IbPort.objects.get(node__name=prom.cluster.nodes[1].name, device="mlx5_1")
    pegged = IbHotSample.objects.filter(port=port, saturated__gt=0)
    assert pegged.exists()
    assert set(pegged.values_list("xmit_wait", "saturated")) == {(None, 16)}


def test_topology_names_each_ports_leaf(prom: SimulatedPrometheus) -> None:
    ingest_history(prom)
    node = prom.cluster.nodes[0]
    leaves = {
        p.device: (p.leaf_switch, p.switch_port)
        for p in IbPort.objects.filter(node__name=node.name).exclude(device="mlx5_8")
    }  # the storage HCA (node_exporter only) is on no leaf of this fabric
    topology = prom.cluster.topology
    expected = {
        f"mlx5_{i}": (topology.switch_for(node, i)[0].name, str(topology.switch_for(node, i)[1]))
        for i in range(8)
    }
    if "treydock" not in prom.variant and "Hostname" not in prom.variant:  # type: ignore[attr-defined]
        expected = {
            device: ("", "") for device in expected
        }  # no uplink info: topology stays unknown
    assert leaves == expected
    assert Node.objects.get(name=node.name).leaf_switch == expected["mlx5_0"][0]


def test_the_same_window_twice_stores_the_same_rows(prom: SimulatedPrometheus) -> None:
    ingest_history(prom, minutes=10)
    counts = (
        IbHotSample.objects.count(),
        Node.objects.get(name=prom.cluster.nodes[0].name).gpuhotsample_set.count(),
    )
    ingest_history(prom, minutes=10)
    assert (
        IbHotSample.objects.count(),
        Node.objects.get(name=prom.cluster.nodes[0].name).gpuhotsample_set.count(),
    ) == counts


def test_every_series_is_stored_under_its_nodes_name(prom: SimulatedPrometheus) -> None:
    # Pod-named Hostname and IP instances (the Kubernetes variants) map to the node: no node
    # is named after an exporter pod or an address.
    ingest_history(prom, minutes=10)
    assert set(Node.objects.values_list("name", flat=True)) == {n.name for n in prom.cluster.nodes}
