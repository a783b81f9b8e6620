"""InfiniBand rules as pure functions: port errors, flaps, stragglers, saturation, switches (congestion: test_rules_ib_congestion.py)."""

from __future__ import annotations

from alerts.rules.data import IbErrorPoint
from tests.alerts.builders import T0, data, findings, ib_series, run_on

NOW = T0 + 7200


def errors(node: str, device: str, ts: float, **counts: float) -> IbErrorPoint:
    """A sparse error row; unspecified counters are 0 and the port is active."""
    base = dict(symbol_errors=0.0, rcv_errors=0.0, local_link_integrity=0.0, excessive_buffer_overrun=0.0,
                link_downed=0.0, link_error_recovery=0.0, state=4)  # fmt: skip
    return IbErrorPoint(node, device, 1, ts, **{**base, **counts})


def test_symbol_errors_above_120_per_hour_are_fatal() -> None:
    rows = [
        errors("gpu-001", "mlx5_0", NOW - 60 * i, symbol_errors=15.0) for i in range(8, 0, -1)
    ]  # 120
    assert findings("ib_port_errors", data(NOW, ib_errors=rows)) == []
    rows.append(errors("gpu-001", "mlx5_0", NOW, symbol_errors=1.0))  # 121
    (found,) = findings("ib_port_errors", data(NOW, ib_errors=rows))
    assert found.labels == {"node": "gpu-001", "device": "mlx5_0", "port": "1"}
    assert (found.state, found.since, found.detail.severity) == ("firing", NOW, "critical")
    assert found.detail.context["reason"] == "121 symbol errors in 60m"


def test_any_link_integrity_or_buffer_overrun_increase_is_fatal() -> None:
    rows = [
        errors("gpu-001", "mlx5_1", NOW - 90, local_link_integrity=1.0),
        errors("gpu-002", "mlx5_2", NOW - 60, excessive_buffer_overrun=2.0),
    ]
    found = findings("ib_port_errors", data(NOW, ib_errors=rows))
    assert sorted((f.labels["node"], f.state, f.detail.severity) for f in found) == [
        ("gpu-001", "firing", "critical"),
        ("gpu-002", "firing", "critical"),
    ]


def test_receive_error_rate_above_ten_per_second_is_degraded() -> None:
    rows = [
        errors("gpu-001", "mlx5_0", NOW - 30, rcv_errors=330.0),
        errors("gpu-002", "mlx5_0", NOW, rcv_errors=300.0),
    ]
    found = findings("ib_port_errors", data(NOW, ib_errors=rows))
    assert [(f.labels["node"], f.detail.severity) for f in found] == [("gpu-001", "warning")]


def test_port_errors_resolve_one_window_after_the_last_error() -> None:
    rows = [errors("gpu-001", "mlx5_0", NOW - 4000, local_link_integrity=1.0)]
    (found,) = findings("ib_port_errors", data(NOW, ib_errors=rows))
    assert (found.state, found.resolved_at) == ("inactive", NOW - 4000 + 3600)


def test_link_downed_increase_is_a_flap() -> None:
    rows = [errors("gpu-004", "mlx5_3", NOW - 120, link_downed=1.0, state=1)]
    ib = ib_series("gpu-004", "mlx5_3", NOW - 600, NOW)
    (found,) = findings("ib_link_flap", data(NOW, ib_errors=rows, ib=ib))
    assert (found.labels["device"], found.state, found.detail.value) == ("mlx5_3", "firing", 1.0)


def test_state_leaving_active_and_returning_is_a_flap_but_staying_down_is_not() -> None:
    flapped = [errors("gpu-001", "mlx5_0", NOW - 300 + 30 * i, state=1) for i in range(3)]
    still_down = [errors("gpu-002", "mlx5_0", NOW - 300 + 30 * i, state=1) for i in range(11)]
    ib = ib_series("gpu-001", "mlx5_0", NOW - 600, NOW) + ib_series(
        "gpu-002", "mlx5_0", NOW - 600, NOW, state=lambda ts: 1 if ts >= NOW - 300 else 4
    )
    found = findings("ib_link_flap", data(NOW, ib_errors=flapped + still_down, ib=ib))
    assert [(f.labels["node"], f.state) for f in found] == [("gpu-001", "firing")]


def test_a_port_without_state_flaps_on_link_downed_alone() -> None:
    # treydock exports no port state: its ports' state is NULL (None), never "not active".
    rows = [errors("o0001", "mlx5_0", NOW - 120, link_downed=1.0, state=None)]
    ib = ib_series("o0001", "mlx5_0", NOW - 600, NOW, state=None)
    (found,) = findings("ib_link_flap", data(NOW, ib_errors=rows, ib=ib))
    assert (found.labels, found.state, found.detail.value) == (
        {"node": "o0001", "device": "mlx5_0", "port": "1"},
        "firing",
        1.0,
    )
    quiet = [errors("o0002", "mlx5_0", NOW - 120, symbol_errors=1.0, state=None)]
    assert findings("ib_link_flap", data(NOW, ib_errors=quiet, ib=ib)) == []


def test_a_pegged_narrow_counter_is_flagged_with_its_bit() -> None:
    # link_downed pegged at 255 (8 bits): ingest stores NULL and bit 6 (64).
    ib = ib_series("gpu-017", "mlx5_0", NOW - 300, NOW, saturated=64)
    (found,) = findings("ib_counter_saturated", data(NOW, ib=ib))
    assert (found.state, found.detail.value, found.detail.context) == (
        "firing",
        64.0,
        {"saturated_mask": 64},
    )


def test_straggler_is_the_node_far_below_the_median_of_the_others() -> None:
    nodes = ["gpu-001", "gpu-002", "gpu-003", "gpu-004"]
    ib = []
    for node in nodes:
        slow = node == "gpu-003"
        ib += ib_series(
            node,
            "mlx5_0",
            NOW - 900,
            NOW,
            tx_bytes=2e9 if slow else 20e9,
            rx_bytes=2e9 if slow else 20e9,
        )
    found = findings("ib_straggler", data(NOW, ib=ib, assignments=run_on(nodes, T0, NOW)))
    assert [(f.labels, f.state) for f in found] == [
        ({"node": "gpu-003", "namespace": "train", "run": "llama"}, "firing")
    ]
    assert found[0].detail.value == 0.1


def test_straggler_ignores_runs_on_too_few_nodes_and_idle_runs() -> None:
    ib = ib_series("gpu-001", "mlx5_0", NOW - 900, NOW) + ib_series(
        "gpu-002", "mlx5_0", NOW - 900, NOW, tx_bytes=1.0
    )
    assert (
        findings(
            "ib_straggler", data(NOW, ib=ib, assignments=run_on(["gpu-001", "gpu-002"], T0, NOW))
        )
        == []
    )
    idle = [
        pt
        for n in ("a", "b", "c")
        for pt in ib_series(n, "mlx5_0", NOW - 900, NOW, tx_bytes=1e6, rx_bytes=1e6)
    ]
    idle += ib_series("d", "mlx5_0", NOW - 900, NOW, tx_bytes=1.0, rx_bytes=1.0)
    assert (
        findings(
            "ib_straggler", data(NOW, ib=idle, assignments=run_on(["a", "b", "c", "d"], T0, NOW))
        )
        == []
    )


def test_saturated_counter_is_flagged() -> None:
    ib = ib_series(
        "gpu-002", "mlx5_1", NOW - 300, NOW, saturated=lambda ts: 4 if ts >= NOW - 60 else 0
    )
    (found,) = findings("ib_counter_saturated", data(NOW, ib=ib))
    assert (found.labels["device"], found.state, found.detail.value) == ("mlx5_1", "firing", 4.0)


def test_many_failing_ports_under_one_leaf_make_a_switch_fault() -> None:
    rows = [
        errors(f"gpu-00{n}", f"mlx5_{p}", NOW - 60, local_link_integrity=1.0)
        for n in (1, 2)
        for p in (0, 1)
    ]
    leaves = {(f"gpu-00{n}", f"mlx5_{p}", 1): "leaf-07" for n in (1, 2) for p in (0, 1)}
    evaluation = data(NOW, ib_errors=rows, leaf_switches=leaves)
    ports = findings("ib_port_errors", evaluation)
    assert {f.extra["leaf_switch"] for f in ports} == {"leaf-07"}
    (switch,) = findings("ib_switch_fault", evaluation)
    assert (switch.labels, switch.state) == ({"leaf_switch": "leaf-07"}, "firing")
    assert switch.detail.context["nodes"] == ["gpu-001", "gpu-002"]
    evaluation.current["ib_port_errors"] = ports[:3]
    assert findings("ib_switch_fault", evaluation) == []
