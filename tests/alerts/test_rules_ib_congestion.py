"""ib_congestion as a pure function: lost share in real units, judged against peers and at scope."""

from __future__ import annotations

from alerts.rules.ib_congestion import upper_median
from tests.alerts.builders import T0, data, findings, ib_series, run_on

NOW = T0 + 7200
RATE = 50e9  # NDR port, bytes/s
NODES = [f"gpu-{i:03d}" for i in range(1, 9)]
DEVICES = [f"mlx5_{i}" for i in range(4)]


def wait_for(share: float) -> float:
    """xmit_wait increments/s that lose ``share`` of an NDR link (8 bytes per increment)."""
    return share * RATE / 8


def fabric(share, nodes: list[str] = NODES) -> list:  # noqa: ANN001 - share(node, device, ts)
    """Every port of ``nodes`` over 15 minutes, losing share(node, device, ts)."""
    points = []
    for node in nodes:
        for device in DEVICES:
            wait = lambda ts, n=node, d=device: wait_for(share(n, d, ts))  # noqa: E731
            points += ib_series(node, device, NOW - 900, NOW, xmit_wait=wait)
    return points


def rail_leaves(nodes: list[str] = NODES) -> dict:
    """Rail-aligned leaves: mlx5_r of every node under leaf-r."""
    return {(n, d, 1): f"leaf-{d[-1]}" for n in nodes for d in DEVICES}


def labels(found: list) -> list[tuple]:
    return sorted((tuple(sorted(f.labels.items())), f.state) for f in found)


def test_share_is_xmit_wait_times_8_bytes_over_the_port_rate() -> None:
    since = NOW - 360
    ib = fabric(lambda n, d, ts: 0.05 if (n, d) == ("gpu-003", "mlx5_2") and ts >= since else 1e-5)
    (found,) = findings("ib_congestion", data(NOW, ib=ib, assignments=run_on(NODES, T0, NOW)))
    assert found.labels == {"node": "gpu-003", "device": "mlx5_2", "port": "1"}
    assert (found.state, found.since, found.fired_at) == ("firing", since, since + 300)
    assert found.detail.value == 0.05
    assert (
        found.detail.context["xmit_wait"] == 3.125e8 and found.detail.context["peer_median"] == 0.0
    )


def test_even_load_driven_wait_on_every_busy_port_raises_nothing() -> None:
    ib = fabric(lambda n, d, ts: 0.03 + 0.001 * DEVICES.index(d))  # above lost_share_min, evenly
    evaluation = data(NOW, ib=ib, assignments=run_on(NODES, T0, NOW), leaf_switches=rail_leaves())
    assert findings("ib_congestion", evaluation) == []


def test_a_port_waiting_like_its_run_peers_is_not_congested() -> None:
    ib = fabric(lambda n, d, ts: 0.09 if (n, d) == ("gpu-001", "mlx5_0") else 0.03)
    evaluation = data(NOW, ib=ib, assignments=run_on(NODES, T0, NOW))
    assert findings("ib_congestion", evaluation) == []  # 3x its peers, not 4x


def test_a_whole_run_waiting_together_is_one_alert_at_run_scope() -> None:
    slow, other = NODES[:4], NODES[4:]
    ib = fabric(lambda n, d, ts: 0.1 if n in slow else 0.001)
    runs = run_on(slow, T0, NOW, run="llama") + run_on(other, T0, NOW, run="mixtral")
    found = findings(
        "ib_congestion", data(NOW, ib=ib, assignments=runs, leaf_switches=rail_leaves())
    )
    assert labels(found) == [((("namespace", "train"), ("run", "llama")), "firing")]
    # The other run's 0.1 % is below the candidate level (2 % / 4): fetched as 0.
    assert found[0].detail.context == {"lost_share": 0.1, "ports_waiting": 16, "ports": 16,
                                       "peer_median": 0.0}  # fmt: skip


def test_a_whole_leaf_switch_waiting_together_is_one_alert_at_leaf_scope() -> None:
    ib = fabric(lambda n, d, ts: 0.2 if d == "mlx5_1" else 0.002)
    runs = run_on(NODES[:4], T0, NOW, run="llama") + run_on(NODES[4:], T0, NOW, run="mixtral")
    found = findings(
        "ib_congestion", data(NOW, ib=ib, assignments=runs, leaf_switches=rail_leaves())
    )
    assert labels(found) == [((("leaf_switch", "leaf-1"),), "firing")]


def test_a_run_filling_its_leaves_is_the_runs_congestion_not_the_leaves() -> None:
    ib = fabric(lambda n, d, ts: 0.1 if n in NODES[:6] else 0.001)
    leaves = {(n, d, 1): "leaf-a" if n in NODES[:6] else "leaf-b" for n in NODES for d in DEVICES}
    nodes_b = [f"gpu-{i:03d}" for i in range(9, 13)]
    ib += fabric(lambda n, d, ts: 0.001, nodes_b)
    leaves |= {(n, d, 1): "leaf-b" for n in nodes_b for d in DEVICES}
    runs = run_on(NODES[:6], T0, NOW, run="llama") + run_on(NODES[6:] + nodes_b, T0, NOW, run="mix")
    found = findings("ib_congestion", data(NOW, ib=ib, assignments=runs, leaf_switches=leaves))
    # leaf-a holds only llama's ports, but llama does not reach beyond it: the leaf is named.
    assert labels(found) == [((("leaf_switch", "leaf-a"),), "firing")]


def test_unknown_rate_or_pegged_wait_is_not_judged() -> None:
    ib = fabric(lambda n, d, ts: 0.5 if n == "gpu-001" else 1e-5)
    ib = [pt._replace(rate=None) if pt.node == "gpu-001" and pt.device == "mlx5_0" else pt
          for pt in ib]  # fmt: skip
    ib = [pt._replace(xmit_wait=None) if pt.node == "gpu-001" and pt.device != "mlx5_0" else pt
          for pt in ib]  # fmt: skip
    assert findings("ib_congestion", data(NOW, ib=ib, assignments=run_on(NODES, T0, NOW))) == []


def test_upper_median_counts_the_censored_ports_as_zero() -> None:
    assert (upper_median(5, [0.3, 0.1]), upper_median(4, [0.3, 0.1]), upper_median(3, [])) == (
        0.0,
        0.1,
        0.0,
    )
    assert upper_median(2, [0.2, 0.4]) == 0.4


def test_without_run_data_ports_and_leaves_are_judged_against_the_fabric() -> None:
    ib = fabric(lambda n, d, ts: 0.3 if (n, d) == ("gpu-002", "mlx5_3") or d == "mlx5_1" else 0.001)
    found = findings("ib_congestion", data(NOW, ib=ib, leaf_switches=rail_leaves()))
    assert labels(found) == [
        ((("device", "mlx5_3"), ("node", "gpu-002"), ("port", "1")), "firing"),
        ((("leaf_switch", "leaf-1"),), "firing"),
    ]
    assert found[0].extra == {"leaf_switch": "leaf-3"}
