"""The GPU hardware rules and gpu_xid's gone GPUs, as pure functions over plain data."""

from __future__ import annotations

from alerts.hardware import node_verdicts, verdict_of
from alerts.rules.data import GoneXid, GpuHealthPoint, XidPoint
from tests.alerts.builders import STEP, T0, data, findings, run_on

NOW = T0 + 3600


def rows(node: str, gpu: int, start: float, end: float, **values: float) -> list[GpuHealthPoint]:
    """One sparse health row per step in [start, end) with ``values`` (others healthy)."""
    base = {"ecc_dbe_vol": 0.0, "pcie_replay": 0.0, "row_remap_failure": 0.0,
            "row_remap_pending": 0.0, "clock_events": 0}  # fmt: skip
    count = int((end - start) // STEP)
    return [GpuHealthPoint(node, gpu, start + i * STEP, **{**base, **values}) for i in range(count)]  # type: ignore[arg-type]


def test_one_volatile_dbe_fires_at_once_and_holds_until_the_count_returns_to_zero() -> None:
    health = rows("gpu-001", 0, NOW - 600, NOW - 120, ecc_dbe_vol=1.0)
    (found,) = findings("gpu_ecc_dbe", data(NOW, gpu_health=health))
    assert (found.state, found.since, found.labels) == (
        "inactive",
        NOW - 600,
        {"node": "gpu-001", "gpu": "0"},
    )
    assert found.resolved_at == NOW - 150 + 90  # the last flagged row + one sample gap
    (firing,) = findings("gpu_ecc_dbe", data(NOW - 200, gpu_health=health))
    assert (firing.state, firing.detail.value) == ("firing", 1.0)
    assert firing.detail.context["verdict"] == "needs_reset"


def test_row_remap_failure_is_critical_rma_and_pending_a_reset_warning() -> None:
    health = rows("gpu-001", 1, NOW - 300, NOW + 1, row_remap_failure=1.0) + rows(
        "gpu-001", 4, NOW - 300, NOW + 1, row_remap_pending=1.0
    )
    (failure,) = findings("gpu_row_remap_failure", data(NOW, gpu_health=health))
    (pending,) = findings("gpu_row_remap_pending", data(NOW, gpu_health=health))
    assert (failure.labels["gpu"], failure.state, failure.detail.context["verdict"]) == (
        "1",
        "firing",
        "needs_rma",
    )
    assert (pending.labels["gpu"], pending.state, pending.detail.context["verdict"]) == (
        "4",
        "firing",
        "needs_reset",
    )


def test_throttling_fires_after_five_minutes_on_a_gpu_of_a_run_and_not_for_the_power_cap() -> None:
    hot = rows("gpu-001", 6, NOW - 600, NOW + 1, clock_events=0x40 | 0x04)
    capped = rows("gpu-002", 6, NOW - 600, NOW + 1, clock_events=0x04)
    idle_hot = rows("gpu-003", 6, NOW - 600, NOW + 1, clock_events=0x40)
    evaluation = data(NOW, gpu_health=hot + capped + idle_hot,
                      assignments=run_on(["gpu-001", "gpu-002"], T0, NOW))  # fmt: skip
    (found,) = findings("gpu_throttle", evaluation)
    assert (found.labels, found.state, found.since, found.fired_at) == (
        {"node": "gpu-001", "gpu": "6"}, "firing", NOW - 600, NOW - 300)  # fmt: skip
    assert found.detail.context["reasons"] == ["hw_thermal"]
    assert found.detail.context["run"] == "llama"


def test_pcie_replays_fire_above_eight_a_minute_over_five_minutes() -> None:
    fast = rows("gpu-001", 7, NOW - 600, NOW + 1, pcie_replay=5.0)  # 10 a minute
    slow = rows("gpu-002", 7, NOW - 600, NOW + 1, pcie_replay=3.0)  # 6 a minute
    found = findings("gpu_pcie_replay", data(NOW, gpu_health=fast + slow))
    assert [(f.labels["node"], f.state, f.detail.value) for f in found] == [
        ("gpu-001", "firing", 10.0)
    ]


def test_a_gone_gpu_keeps_its_xid_firing_for_hours_until_it_reports_again() -> None:
    event = NOW - 4 * 3600
    gone = [GoneXid("gpu-001", 2, event, 79, "GPU has fallen off the bus", None)]
    (still,) = findings("gpu_xid", data(NOW, xid_gone=gone))
    assert (still.state, still.since, still.detail.context["gone"]) == ("firing", event, True)
    back = [gone[0]._replace(returned=NOW - 60)]
    (resolved,) = findings("gpu_xid", data(NOW, xid_gone=back))
    assert (resolved.state, resolved.resolved_at) == ("inactive", NOW - 60)


def test_other_hardware_xids_still_end_one_window_after_the_event() -> None:
    xids = [XidPoint("gpu-001", 2, NOW - 4000, 48, "Double Bit ECC Error")]
    found = findings("gpu_xid", data(NOW, xids=xids))
    assert [(f.state, f.until) for f in found] == [("inactive", NOW - 4000 + 3600)]


def test_the_verdict_is_the_worst_of_the_nodes_firing_hardware_alerts() -> None:
    assert verdict_of([]) == "healthy"
    assert verdict_of(["gpu_throttle", "nvlink_errors"]) == "degraded"
    assert verdict_of(["gpu_throttle", "gpu_ecc_dbe"]) == "needs_reset"
    assert verdict_of(["gpu_row_remap_pending", "gpu_row_remap_failure"]) == "needs_rma"
    assert verdict_of(["ib_port_errors"]) == "healthy"  # not GPU hardware
    assert node_verdicts([]) == {}
