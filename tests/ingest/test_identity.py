"""The node identity rules on decoded series (pure: no Prometheus, no database)."""

from __future__ import annotations

from ingest.coverage_identity import SUSPECT_IP, SUSPECT_POD, summarise
from ingest.identity import (
    FIX_KSM,
    FIX_NODE_NAME,
    Mapped,
    NodeResolver,
    Unresolved,
    directory_from,
)
from ingest.prometheus import Series


def series(**labels: str) -> Series:
    return Series(labels, [(0.0, 1.0)])


NODE_INFO = [
    series(node="n1", internal_ip="10.0.0.1"),
    series(node="n2", internal_ip=""),
    series(node="n3", internal_ip="10.0.0.3"),
]
POD_INFO = [
    series(
        pod="dcgm-aaaaa", node="n1", host_ip="10.0.0.1", pod_ip="10.1.1.9", host_network="false"
    ),
    series(pod="ne-bbbbb", node="n2", host_ip="10.0.0.2", pod_ip="10.0.0.2", host_network="true"),
    # Two pods named alike in two namespaces, on two nodes: the name is ambiguous.
    series(pod="twin", node="n1", host_ip="10.0.0.1", pod_ip="10.1.1.5", host_network="false"),
    series(pod="twin", node="n3", host_ip="10.0.0.3", pod_ip="10.1.3.5", host_network="false"),
    series(pod="gone", node="n9", host_ip="10.0.0.9", pod_ip="10.1.9.9", host_network="false"),
]


def resolver() -> NodeResolver:
    return NodeResolver(directory_from(NODE_INFO, POD_INFO))


def test_the_directory_keeps_pods_of_known_nodes_and_marks_ambiguous_keys() -> None:
    directory = directory_from(NODE_INFO, POD_INFO)
    assert directory.nodes == {"n1", "n2", "n3"}
    assert dict(directory.internal_ips) == {"10.0.0.1": "n1", "10.0.0.3": "n3"}
    assert dict(directory.host_ips) == {"10.0.0.1": "n1", "10.0.0.2": "n2", "10.0.0.3": "n3"}
    assert dict(directory.pods) == {"dcgm-aaaaa": "n1", "ne-bbbbb": "n2", "twin": ""}
    assert dict(directory.pod_ips) == {"10.1.1.9": "n1", "10.1.1.5": "n1", "10.1.3.5": "n3"}


def test_each_rule_names_its_node_and_counts_how() -> None:
    names = resolver()
    found = [
        names.node_of({"Hostname": "n3", "job": "dcgm"}),
        names.node_of({"Hostname": "dcgm-aaaaa", "instance": "10.1.1.9:9400", "job": "dcgm"}),
        names.node_of({"Hostname": "0123456789ab", "instance": "10.1.3.5:9400", "job": "dcgm"}),
        names.node_of({"instance": "10.0.0.1:9100", "job": "ne"}),
        names.node_of({"instance": "10.0.0.2:9100", "job": "ne"}),
        names.node_of({"instance": "n3", "job": "ne"}),
    ]
    assert found == ["n3", "n1", "n3", "n1", "n2", "n3"]
    assert {key: len(ids) for key, ids in names.mapped.items()} == {
        ("dcgm", Mapped.LABEL): 1,
        ("dcgm", Mapped.POD_NAME): 1,
        ("dcgm", Mapped.POD_IP): 1,
        ("ne", Mapped.INTERNAL_IP): 1,
        ("ne", Mapped.HOST_IP): 1,
        ("ne", Mapped.INSTANCE): 1,
    }
    assert names.unresolved == {}


def test_what_names_no_node_is_counted_per_job_with_the_reason() -> None:
    names = resolver()
    missing = [
        names.node_of({"Hostname": "gone", "instance": "10.1.9.9:9400", "job": "dcgm"}),
        names.node_of({"Hostname": "twin", "instance": "10.9.9.9:9400", "job": "dcgm"}),
        names.node_of({"instance": "10.0.0.99:9100", "job": "ne"}),
        names.node_of({"node": "elsewhere", "instance": "10.0.0.98:9100", "job": "ne"}),
        names.node_of({"job": "ne"}),
        names.node_of({"node": "n1\nx", "job": "ne"}),
    ]
    assert missing == [None] * 6
    assert names.unfit() == {
        f"dcgm: {Unresolved.AMBIGUOUS}": 1,
        f"dcgm: {Unresolved.POD_NAME}": 1,
        f"ne: {Unresolved.INSTANCE}": 1,
        f"ne: {Unresolved.NO_LABEL}": 1,
        f"ne: {Unresolved.LABEL}": 1,
        f"ne: {Unresolved.INVALID}": 1,
    }


def test_treydock_node_descriptions_are_checked_against_known_nodes() -> None:
    names = resolver()
    assert names.located(("n1", "mlx5_3"), "0x0002c90300a1b2c3", {"job": "ib"}) == ("n1", "mlx5_3")
    assert names.located(("Mellanox", "mlx5_0"), "0x1", {"job": "ib"}) is None
    assert names.located(("n2", "d" * 65), "0x2", {"job": "ib"}) is None
    assert names.unfit() == {f"ib: {Unresolved.DEVICE}": 1, f"ib: {Unresolved.LABEL}": 1}


def test_without_kube_state_metrics_coverage_flags_pod_and_ip_names_with_the_fixes() -> None:
    names = NodeResolver()
    names.node_of(
        {"Hostname": "nvidia-dcgm-exporter-ml2wh", "instance": "10.1.1.9:9400", "job": "dcgm"}
    )
    names.node_of({"Hostname": "gpu-001", "instance": "10.1.1.8:9400", "job": "dcgm"})
    names.node_of({"instance": "10.0.0.14:9100", "job": "ne"})
    exporters = {e.job: e for e in summarise("gpu", names)}
    assert [(g.reason, g.series, g.examples) for g in exporters["dcgm"].suspect] == [
        (SUSPECT_POD, 1, ["instance='10.1.1.9:9400', Hostname='nvidia-dcgm-exporter-ml2wh'"])
    ]
    assert exporters["dcgm"].suspect[0].fix == f"{FIX_NODE_NAME}; or {FIX_KSM}"
    assert [(g.reason, g.series) for g in exporters["ne"].suspect] == [(SUSPECT_IP, 1)]
    assert [(g.reason, g.series) for g in exporters["dcgm"].mapped] == [(Mapped.AS_IS, 2)]
