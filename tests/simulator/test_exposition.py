"""Every dialect's exposition parses (prometheus_client and promtool) with the names of docs/domain.md."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulator import (
    Cluster,
    ClusterSpec,
    ExporterOptions,
    Fault,
    FaultKind,
    render_target,
    renderer_for,
)
from simulator.counters import pegged
from tests.support.prometheus import PROMTOOL, require_prometheus

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
T = EPOCH.timestamp()
# promtool's lint rules that the real dcgm-exporter breaks too (its names are fixed by NVIDIA).
DCGM_LINT = (
    "label names should be written in 'snake_case' not 'camelCase'",
    'counter metrics should have "_total" suffix',
    "metric name should not include type 'counter'",  # DCGM_FI_DEV_PCIE_REPLAY_COUNTER
)


def cluster(**options: object) -> Cluster:
    return Cluster(ClusterSpec(nodes=8, seed=3, epoch=EPOCH, exporters=ExporterOptions(**options)))  # type: ignore[arg-type]


def exposition(c: Cluster, dialect: str, at: float = T) -> str:
    target = next(t for t in renderer_for(c).targets if t.dialect == dialect)
    text = render_target(c, target, at)
    assert text is not None
    return text


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def labels_of(text: str, name: str) -> set[str]:
    found: set[str] = set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                found |= set(sample.labels)
    return found


DIALECTS = ["dcgm", "node_ib", "treydock", "ksm", "kueue", "checkpoints"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_parses_with_prometheus_client(dialect: str) -> None:
    parsed = families(exposition(cluster(), dialect))
    assert parsed


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_passes_promtool_check_metrics(dialect: str) -> None:
    require_prometheus()
    result = subprocess.run(
        [PROMTOOL, "check", "metrics"],
        input=exposition(cluster(), dialect),
        capture_output=True,
        text=True,
    )
    problems = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    if dialect == "dcgm":
        assert result.returncode in (0, 3)  # 3 = lint warnings only, 1 would be a parse error
        assert all(any(rule in p for rule in DCGM_LINT) for p in problems), problems
    else:
        assert result.returncode == 0, problems


#: The uncommented fields of NVIDIA/dcgm-exporter etc/default-counters.csv (4.5.3-4.8.2), in order.
DCGM_DEFAULT_FIELDS = [
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_PROF_PCIE_RX_BYTES",
]  # fmt: skip


#: What health monitoring adds to the CSV (docs/dcgm.md "Hardware health"); the simulator's default.
DCGM_HEALTH_FIELDS = [
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
]  # fmt: skip


def test_dcgm_emits_the_default_counters_with_hostname_and_pod_labels() -> None:
    assert (
        list(families(exposition(cluster(dcgm_health_fields=False), "dcgm"))) == DCGM_DEFAULT_FIELDS
    )
    text = exposition(cluster(), "dcgm")
    parsed = families(text)
    assert list(parsed) == DCGM_DEFAULT_FIELDS + DCGM_HEALTH_FIELDS
    assert parsed["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].type == "counter"  # type: ignore[attr-defined]
    assert labels_of(text, "DCGM_FI_DEV_GPU_UTIL") == {
        "gpu",
        "UUID",
        "pci_bus_id",
        "device",
        "modelName",
        "Hostname",
        "DCGM_FI_DRIVER_VERSION",
        "container",
        "namespace",
        "pod",
    }


def test_dcgm_hostname_option_renames_the_node_label() -> None:
    assert "hostname" in labels_of(
        exposition(cluster(dcgm_node_label="hostname"), "dcgm"), "DCGM_FI_DEV_GPU_UTIL"
    )


def test_dcgm_legacy_option_emits_1x_names_and_labels() -> None:
    text = exposition(cluster(dcgm_legacy=True), "dcgm")
    names = [line.partition("{")[0] for line in text.splitlines() if not line.startswith("#")]
    assert list(dict.fromkeys(names)) == [
        "dcgm_sm_clock",
        "dcgm_memory_clock",
        "dcgm_memory_temp",
        "dcgm_gpu_temp",
        "dcgm_power_usage",
        "dcgm_total_energy_consumption",
        "dcgm_pcie_replay_counter",
        "dcgm_gpu_utilization",
        "dcgm_mem_copy_utilization",
        "dcgm_enc_utilization",
        "dcgm_dec_utilization",
        "dcgm_xid_errors",
        "dcgm_fb_free",
        "dcgm_fb_used",
        "dcgm_nvlink_bandwidth_total",
        "dcgm_fi_prof_gr_engine_active",
        "dcgm_fi_prof_pipe_tensor_active",
        "dcgm_fi_prof_dram_active",
        "dcgm_fi_prof_pcie_tx_bytes",
        "dcgm_fi_prof_pcie_rx_bytes",
        "dcgm_ecc_dbe_volatile_total",  # commented out in that CSV; the health fields enable it
    ]  # fmt: skip  (etc/1.x-compatibility-metrics.csv, uncommented)
    assert labels_of(text, "dcgm_gpu_utilization") == {
        "gpu", "uuid", "pci_bus_id", "device", "modelName", "Hostname",
        "container_name", "pod_name", "pod_namespace",
    }  # fmt: skip


def test_without_the_profiling_module_every_prof_field_vanishes() -> None:
    text = exposition(cluster(dcgm_profiling=False), "dcgm")
    assert "DCGM_FI_DEV_GPU_UTIL" in families(text)
    assert "DCGM_FI_PROF_" not in text


def test_node_exporter_ib_ports_are_labelled_device_and_port() -> None:
    text = exposition(cluster(), "node_ib")
    assert labels_of(text, "node_infiniband_port_data_transmitted_bytes_total") == {
        "device",
        "port",
    }
    states = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "node_infiniband_state_id"
    ]
    # 8 rail HCAs, a dual-port storage HCA and an iWARP device (node_exporter lists every RDMA
    # device; i40iw0 has state and rate but no counter, as in node_exporter's own fixture).
    assert [s.value for s in states] == [4.0] * 11
    rails = {(f"mlx5_{i}", "1") for i in range(8)}
    assert {(s.labels["device"], s.labels["port"]) for s in states} == rails | {
        ("mlx5_8", "1"),
        ("mlx5_8", "2"),
        ("i40iw0", "1"),
    }
    counted = {
        (s.labels["device"], s.labels["port"])
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "node_infiniband_link_downed_total"
    }
    assert counted == rails | {("mlx5_8", "1"), ("mlx5_8", "2")}


def test_node_exporter_extra_devices_are_optional() -> None:
    text = exposition(cluster(node_ib_iwarp_device=False, node_ib_dual_port_hca=False), "node_ib")
    devices = {
        s.labels["device"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "node_infiniband_state_id"
    }
    assert devices == {f"mlx5_{i}" for i in range(8)}


def test_treydock_maps_guids_to_nodes_and_switch_ports() -> None:
    text = exposition(cluster(), "treydock")
    hca = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "infiniband_hca_info"
    ]
    # rdma-core's default node description "<host> <device>", and one SHARP aggregation node.
    assert hca[0].labels["hca"] == "gpu-001 mlx5_0"
    assert {h.labels["hca"] for h in hca if not h.labels["hca"].startswith("gpu-")} == {
        "Mellanox Technologies Aggregation Node"
    }
    assert labels_of(text, "infiniband_hca_rate_bytes_per_second") == {"guid"}
    assert not [n for n in families(text) if n.startswith("infiniband_hca") and "state" in n]
    assert labels_of(text, "infiniband_hca_uplink_info") == {
        "guid", "hca", "port", "uplink", "uplink_guid", "uplink_lid", "uplink_port", "uplink_type"
    }  # fmt: skip
    assert labels_of(text, "infiniband_switch_uplink_info") == {
        "guid",
        "port",
        "switch",
        "uplink",
        "uplink_guid",
        "uplink_type",
        "uplink_port",
        "uplink_lid",
    }
    assert labels_of(text, "infiniband_hca_port_transmit_data_bytes_total") == {"guid", "port"}


def test_treydock_hca_collector_and_name_style_are_options() -> None:
    off = exposition(cluster(treydock_hca_collector=False), "treydock")
    assert not [n for n in families(off) if n.startswith("infiniband_hca")]
    assert "infiniband_switch_uplink_info" in families(off)
    mlnx = exposition(cluster(treydock_hca_names="mlnx"), "treydock")
    assert 'hca="gpu-001 HCA-1"' in mlnx


def test_narrow_counters_stick_at_their_widths() -> None:
    assert [pegged(c) for c in ("symbol_error", "link_downed", "transmit_wait")] == [
        65535.0,
        255.0,
        4294967295.0,
    ]
    fault = Fault(
        FaultKind.IB_COUNTER_SATURATED,
        timedelta(0),
        timedelta(minutes=10),
        nodes=["gpu-002"],
        ports=[1],
        params={"counter": "link_downed"},
    )
    c = Cluster(replace(cluster().spec, faults=[fault]))
    samples = families(exposition_for_node(c, "node_ib", "gpu-002", T + 300))
    downed = {s.labels["device"]: s.value for s in samples["node_infiniband_link_downed"].samples}  # type: ignore[attr-defined]
    assert (downed["mlx5_1"], downed["mlx5_0"]) == (255.0, 0.0)


def test_ksm_pods_name_their_job_and_kueue_queue() -> None:
    text = exposition(cluster(), "ksm")
    info = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "kube_pod_info"
    ]
    training = [s for s in info if s.labels["created_by_kind"] == "Job"]
    assert training and all(
        s.labels["pod"].startswith(s.labels["created_by_name"]) for s in training
    )
    assert "label_kueue_x_k8s_io_queue_name" in labels_of(text, "kube_pod_labels")
    taints = {
        s.labels["value"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "kube_node_spec_taint"
    }
    assert taints == {"training", "inference"}


def test_kueue_series_all_carry_replica_role() -> None:
    text = exposition(cluster(), "kueue")
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert all(s.labels.get("replica_role") == "leader" for s in samples)
    assert families(text)["kueue_admission_wait_time_seconds"].type == "histogram"  # type: ignore[attr-defined]


def test_live_exposition_has_no_job_or_instance_labels() -> None:
    c = cluster()
    for dialect in DIALECTS:
        text = exposition(c, dialect)
        assert ' job="' not in text and ",job=" not in text and "instance=" not in text


def test_hostile_label_values_are_escaped_and_parse() -> None:
    evil = '<script>alert("x")</script>'
    c = Cluster(ClusterSpec(nodes=8, seed=3, epoch=EPOCH, hostile_label=evil))
    text = exposition(c, "ksm")
    nodes = {
        s.labels["node"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "kube_node_spec_taint"
    }
    assert evil in nodes


def test_the_same_instant_renders_the_same_bytes() -> None:
    assert exposition(cluster(), "dcgm") == exposition(cluster(), "dcgm")
    assert exposition(cluster(), "node_ib", T + 60) == exposition(cluster(), "node_ib", T + 60)


def test_ib_counters_are_monotonic_between_reboots() -> None:
    c = cluster()
    renderer = renderer_for(c)
    node = c.node("gpu-001")
    values = [renderer.ports.sample(c.state(node, T + i * 60), 0).tx_bytes for i in range(30)]
    assert values == sorted(values)


def test_a_saturated_counter_sticks_at_2_to_the_32_minus_1() -> None:
    fault = Fault(
        FaultKind.IB_COUNTER_SATURATED,
        timedelta(0),
        timedelta(minutes=10),
        nodes=["gpu-002"],
        ports=[1],
    )
    c = Cluster(replace(cluster().spec, faults=[fault]))
    samples = families(exposition_for_node(c, "node_ib", "gpu-002", T + 300))
    waits = {
        s.labels["device"]: s.value for s in samples["node_infiniband_port_transmit_wait"].samples
    }  # type: ignore[attr-defined]
    assert waits["mlx5_1"] == 4294967295.0
    assert waits["mlx5_0"] != 4294967295.0


def exposition_for_node(c: Cluster, dialect: str, node: str, at: float) -> str:
    target = next(t for t in renderer_for(c).targets if t.dialect == dialect and t.node == node)
    text = render_target(c, target, at)
    assert text is not None
    return text


def test_a_down_node_has_no_exposition() -> None:
    fault = Fault(FaultKind.NODE_DOWN, timedelta(0), timedelta(minutes=10), nodes=["gpu-003"])
    c = Cluster(replace(cluster().spec, faults=[fault]))
    target = next(t for t in renderer_for(c).targets if t.node == "gpu-003")
    assert render_target(c, target, T + 60) is None
    assert render_target(c, target, T + 660) is not None
