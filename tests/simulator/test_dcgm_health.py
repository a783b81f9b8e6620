"""The dcgm dialect's hardware-health fields: healthy values, each hardware fault, a GPU gone after XID 79."""

from __future__ import annotations

from datetime import timedelta

from simulator import Fault, FaultKind
from tests.simulator.test_dcgm_shapes import EPOCH, scrape

MIN = timedelta(minutes=1)
# prometheus_client names a counter's samples <name>_total.
HEALTH = ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL_total", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_PENDING",
          "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")  # fmt: skip


def by_gpu(samples: list, name: str) -> dict[str, float]:
    return {s.labels["gpu"]: s.value for s in samples if s.name == name}


def fault(kind: str, gpu: int, **params: object) -> Fault:
    return Fault(
        kind, EPOCH - 5 * MIN, EPOCH + 5 * MIN, nodes=["gpu-001"], gpus=[gpu], params=params
    )


def test_each_hardware_fault_sets_its_field_on_its_gpu_only() -> None:
    faults = (fault(FaultKind.GPU_ECC_DBE, 0), fault(FaultKind.GPU_ROW_REMAP_FAILURE, 1),
              fault(FaultKind.GPU_ROW_REMAP_PENDING, 4), fault(FaultKind.GPU_THROTTLE, 6),
              fault(FaultKind.GPU_PCIE_REPLAY, 7))  # fmt: skip
    cluster, samples = scrape(faults)
    node = [
        s for s in samples if s.labels.get("Hostname", "").endswith(cluster.nodes[0].name) or True
    ]
    flagged = {name: {g for g, v in by_gpu(node, name).items() if v} for name in HEALTH[:3]}
    assert flagged == {HEALTH[0]: {"0"}, HEALTH[1]: {"1"}, HEALTH[2]: {"4"}}
    clocks = by_gpu(node, HEALTH[3])
    assert int(clocks["6"]) & 0x40 and not any(int(v) & 0xE8 for g, v in clocks.items() if g != "6")
    replays = by_gpu(node, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER_total")
    assert replays["7"] == 150 and {v for g, v in replays.items() if g != "7"} == {0}


def test_a_gpu_gone_after_xid_79_reports_only_its_xid() -> None:
    _cluster, samples = scrape((fault(FaultKind.XID, 2, code=79),))
    assert set(by_gpu(samples, "DCGM_FI_DEV_GPU_UTIL")) == {str(g) for g in range(8) if g != 2}
    assert by_gpu(samples, "DCGM_FI_DEV_XID_ERRORS")["2"] == 79
    _cluster, later = scrape((fault(FaultKind.XID, 2, code=48),))
    assert "2" in by_gpu(later, "DCGM_FI_DEV_GPU_UTIL")  # other codes leave the GPU reporting
