"""The dcgm-exporter dialect's shapes: XID labels, MIG, pod_uid, NVLink bandwidth as a rate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from simulator import Cluster, ClusterSpec, ExporterOptions, Fault, FaultKind
from simulator.gpu import GpuModel
from simulator.render import Renderer

EPOCH = datetime(2026, 3, 2, 12, tzinfo=UTC)


def scrape(faults: tuple[Fault, ...] = (), **options: object) -> tuple[Cluster, list]:
    cluster = Cluster(
        ClusterSpec(
            nodes=2, seed=5, epoch=EPOCH, faults=faults, exporters=ExporterOptions(**options)
        )
    )
    renderer = Renderer(cluster)
    target = next(t for t in renderer.targets if t.dialect == "dcgm")
    text = "\n".join(renderer.lines(target, EPOCH.timestamp())) + "\n"
    # prometheus_client names a counter's samples <name>_total (the exposition has <name>).
    return cluster, [s for f in text_string_to_metric_families(text) for s in f.samples]


def test_every_xid_sample_has_err_code_and_err_msg_zero_included() -> None:
    xid = Fault(FaultKind.XID, EPOCH - timedelta(minutes=5), EPOCH + timedelta(minutes=5),
                nodes=["gpu-001"], gpus=[3], params={"code": 79})  # fmt: skip
    _cluster, samples = scrape((xid,))
    found = sorted(
        (s.labels["gpu"], s.labels["err_code"], s.labels["err_msg"], s.value)
        for s in samples
        if s.name == "DCGM_FI_DEV_XID_ERRORS"
    )
    assert found == sorted(
        [(str(g), "0", "No Error", 0.0) for g in range(8) if g != 3]
        + [("3", "79", "GPU has fallen off the bus", 79.0)]
    )


def test_mig_gpus_carry_gpu_instance_labels() -> None:
    _cluster, samples = scrape(dcgm_mig_profile="3g.40gb", dcgm_mig_instances=2)
    util = [
        s.labels for s in samples if s.name == "DCGM_FI_DEV_GPU_UTIL" and s.labels["gpu"] == "0"
    ]
    assert [(u["GPU_I_PROFILE"], u["GPU_I_ID"]) for u in util] == [
        ("3g.40gb", "1"),
        ("3g.40gb", "2"),
    ]


def test_pod_uid_only_with_the_option() -> None:
    cluster, with_uid = scrape(dcgm_pod_uid=True)
    _cluster, without = scrape()
    state = cluster.state(cluster.nodes[0], EPOCH.timestamp())
    uids = {s.labels.get("pod_uid") for s in with_uid if s.name == "DCGM_FI_DEV_GPU_UTIL"}
    assert uids == {state.pod.uid}
    assert {"pod_uid" in s.labels for s in without} == {False}


def test_nvlink_bandwidth_is_the_rate_in_dcgm_mb_per_second() -> None:
    cluster, samples = scrape()
    state = cluster.state(cluster.nodes[0], EPOCH.timestamp())
    rate = GpuModel(cluster).sample(state, 0).nvlink_rate
    assert rate > 0
    value = next(
        s.value for s in samples
        if s.name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL_total" and s.labels["gpu"] == "0"
    )  # fmt: skip
    assert value == int(rate / 1_024_000)


def test_nvlink_error_counters_appear_when_the_scenario_injects_nvlink_errors() -> None:
    fault = Fault(FaultKind.NVLINK_ERRORS, EPOCH - timedelta(minutes=5), EPOCH, nodes=["gpu-001"])

    def names(samples: list) -> set[str]:
        return {s.name.removesuffix("_total") for s in samples if "NVLINK_CRC" in s.name}

    assert names(scrape()[1]) == set()
    assert names(scrape((fault,))[1]) == {
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    }
