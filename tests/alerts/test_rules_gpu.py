"""gpu_tensor_drift, gpu_xid and nvlink_errors as pure functions over plain data."""

from __future__ import annotations

from alerts.rules.data import NvlinkPoint, XidPoint
from tests.alerts.builders import STEP, T0, data, findings, gpu_series, run_on

NOW = T0 + 3600


def drifting(start: float, end: float):
    """util 100 %, tensor 0.3 %, SM 2 %, 72 W between start and end; healthy training otherwise."""
    inside = lambda ts: start <= ts < end  # noqa: E731
    return {
        "util": lambda ts: 100.0 if inside(ts) else 99.0,
        "tensor": lambda ts: 0.003 if inside(ts) else 0.45,
        "sm": lambda ts: 0.02 if inside(ts) else 0.6,
        "power": lambda ts: 72.0 if inside(ts) else 620.0,
    }


def test_drift_already_sustained_in_the_data_fires_at_the_first_evaluation() -> None:
    points = gpu_series("gpu-001", 3, NOW - 1200, NOW, **drifting(NOW - 720, NOW + 1))
    found = findings(
        "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
    )
    assert len(found) == 1
    drift = found[0]
    assert drift.state == "firing"
    assert drift.labels == {"node": "gpu-001", "gpu": "3"}
    assert drift.extra == {"namespace": "train", "run": "llama"}
    assert drift.since == NOW - 720
    assert drift.fired_at == NOW - 120
    assert drift.detail.context["util"] == 100.0
    assert drift.detail.context["tensor"] == 0.003
    assert drift.detail.context["sm"] == 0.02
    assert drift.detail.context["power"] == 72.0
    assert drift.detail.context["run"] == "llama"
    assert drift.detail.context["pod"] == "llama-0"
    assert drift.detail.context["held_seconds"] == 720.0
    assert drift.detail.value == 0.003


def test_drift_shorter_than_for_is_pending() -> None:
    points = gpu_series("gpu-001", 0, NOW - 1200, NOW, **drifting(NOW - 300, NOW + 1))
    found = findings(
        "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
    )
    assert [(f.state, f.since) for f in found] == [("pending", NOW - 300)]


def test_checkpoint_dips_do_not_fire_drift() -> None:
    # Every 10 min a 90 s checkpoint write: util drops to 30 %, tensor to 0.01, power to 150 W.
    dip = lambda ts: (ts - T0) % 600 < 90  # noqa: E731
    points = gpu_series(
        "gpu-001", 0, NOW - 1800, NOW,
        util=lambda ts: 30.0 if dip(ts) else 99.0, tensor=lambda ts: 0.01 if dip(ts) else 0.45,
        power=lambda ts: 150.0 if dip(ts) else 620.0,
    )  # fmt: skip
    assert (
        findings(
            "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
        )
        == []
    )


def test_short_data_loading_stalls_do_not_fire_drift() -> None:
    # 2-minute stalls at full util with idle tensor cores, every 6 minutes: pending at most.
    stall = lambda ts: (ts - T0) % 360 < 120  # noqa: E731
    last_stall_sample = NOW + 90  # a stall runs [NOW, NOW + 120): judged at its longest

    def at(now: float) -> list[tuple[str, float]]:
        points = gpu_series("gpu-001", 0, NOW - 1800, now, tensor=lambda ts: 0.01 if stall(ts) else 0.45,
                            sm=0.1, power=lambda ts: 120.0 if stall(ts) else 620.0)  # fmt: skip
        evaluation = data(now, gpu=points, assignments=run_on(["gpu-001"], T0, now))
        return [(f.state, f.since) for f in findings("gpu_tensor_drift", evaluation)]

    assert at(last_stall_sample) == [("pending", NOW)]
    assert at(NOW + 120) == [("inactive", NOW)]  # cleared without ever firing


def test_idle_node_does_not_fire_drift() -> None:
    points = gpu_series("gpu-002", 0, NOW - 1800, NOW, util=0.0, tensor=0.0, sm=0.0, power=65.0)
    assert (
        findings(
            "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-002"], T0, NOW))
        )
        == []
    )


def test_drift_needs_a_run_on_the_node_unless_told_otherwise() -> None:
    points = gpu_series("gpu-003", 0, NOW - 1200, NOW, **drifting(NOW - 900, NOW + 1))
    assert findings("gpu_tensor_drift", data(NOW, gpu=points)) == []
    found = findings("gpu_tensor_drift", data(NOW, gpu=points), params={"require_run": False})
    assert [f.state for f in found] == ["firing"]


def test_drift_without_the_profiling_metric_is_never_judged() -> None:
    points = gpu_series("gpu-001", 0, NOW - 1200, NOW, util=100.0, tensor=None, sm=None, power=70.0)
    assert (
        findings(
            "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
        )
        == []
    )


def test_drift_keep_firing_for_bridges_one_noisy_sample() -> None:
    blip = NOW - 150
    values = drifting(NOW - 1200, NOW + 1)
    values["tensor"] = lambda ts: 0.4 if ts == blip else 0.003
    points = gpu_series("gpu-001", 0, NOW - 1200, NOW, **values)
    found = findings(
        "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
    )
    assert [(f.state, f.since) for f in found] == [("firing", NOW - 1200)]
    no_keep = findings(
        "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW)),
        keep_firing_for_seconds=0,
    )  # fmt: skip
    assert [(f.state, f.since) for f in no_keep] == [("pending", blip + STEP)]


def test_drift_resolves_keep_firing_for_after_the_fault_ends() -> None:
    end = NOW - 600
    points = gpu_series("gpu-001", 0, NOW - 1800, NOW, **drifting(NOW - 1800, end))
    found = findings(
        "gpu_tensor_drift", data(NOW, gpu=points, assignments=run_on(["gpu-001"], T0, NOW))
    )
    assert [(f.state, f.until, f.resolved_at) for f in found] == [("inactive", end, end + 120)]


def test_xid_hardware_codes_are_critical_and_application_codes_warnings() -> None:
    xids = [
        XidPoint("gpu-001", 2, NOW - 600, 79, "GPU has fallen off the bus"),
        XidPoint("gpu-002", 5, NOW - 300, 13, "Graphics Engine Exception"),
        XidPoint("gpu-003", 1, NOW - 300, 999, "unknown"),
    ]
    found = {f.labels["node"]: f for f in findings("gpu_xid", data(NOW, xids=xids))}
    assert sorted(found) == ["gpu-001", "gpu-002"]
    assert found["gpu-001"].state == "firing"
    assert found["gpu-001"].detail.severity == "critical"
    assert found["gpu-001"].detail.context["code"] == 79
    assert found["gpu-001"].labels == {"node": "gpu-001", "gpu": "2"}
    assert found["gpu-002"].detail.severity == "warning"


def test_xid_condition_ends_one_window_after_the_event() -> None:
    xids = [XidPoint("gpu-001", 2, NOW - 4000, 79, "")]
    found = findings("gpu_xid", data(NOW, xids=xids))
    assert [(f.state, f.until) for f in found] == [("inactive", NOW - 4000 + 3600)]


def test_nvlink_errors_fire_at_ten_data_or_thirty_flit_errors_per_window() -> None:
    below = [NvlinkPoint("gpu-001", 0, NOW - 60 * i, 2.0, 1.0) for i in (9, 6, 3)]  # 3 data, 6 flit
    data_hit = [NvlinkPoint("gpu-002", 1, NOW - 60 * i, 0.0, 2.5) for i in (4, 3, 2, 1)]  # 10 data
    flit_hit = [NvlinkPoint("gpu-003", 7, NOW - 30, 30.0, 0.0)]
    found = findings("nvlink_errors", data(NOW, nvlink=below + data_hit + flit_hit))
    assert sorted((f.labels["node"], f.state, f.detail.value) for f in found) == [
        ("gpu-002", "firing", 10.0),
        ("gpu-003", "firing", 0.0),
    ]
