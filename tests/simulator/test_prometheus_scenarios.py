"""Each fault's signature, seen through a real Prometheus (history backfilled + live scrapes).

The faults are placed by tests/support/fixtures.py:integration_faults; E is the end of history,
where live scraping begins. Times below are minutes relative to E.
"""

from __future__ import annotations

import pytest

from simulator.faults import ActiveFault
from tests.support.prometheus import SimulatedPrometheus

pytestmark = pytest.mark.prometheus
MIN = 60.0


def fault(prom: SimulatedPrometheus, kind: str, index: int = 0) -> ActiveFault:
    return [f for f in prom.cluster.faults.all if f.kind == kind][index]


def node_of(prom: SimulatedPrometheus, kind: str, index: int = 0) -> str:
    return next(iter(fault(prom, kind, index).nodes))


def values_by(prom: SimulatedPrometheus, expr: str, label: str, at: float) -> dict[str, float]:
    return {r["metric"][label]: float(r["value"][1]) for r in prom.query(expr, at)}


def test_tensor_drift_shows_busy_util_and_idle_tensor_cores_on_that_gpu_only(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "tensor_drift")
    during, after = prom.end - 45 * MIN, prom.end - 20 * MIN
    tensor = values_by(
        prom, f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{Hostname="{prom.hostname(node)}"}}', "gpu", during
    )
    util = values_by(
        prom, f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{prom.hostname(node)}"}}', "gpu", during
    )
    power = values_by(
        prom, f'DCGM_FI_DEV_POWER_USAGE{{Hostname="{prom.hostname(node)}"}}', "gpu", during
    )
    assert tensor["3"] < 0.05 and util["3"] > 95 and power["3"] < 100
    assert all(v > 0.05 for gpu, v in tensor.items() if gpu != "3")
    assert (
        prom.scalar(
            f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{Hostname="{prom.hostname(node)}",gpu="3"}}', after
        )
        > 0.05
    )  # type: ignore[operator]


def test_tensor_drift_that_is_happening_now_is_in_the_live_scrape(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "tensor_drift", 1)
    expr = f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{Hostname="{prom.hostname(node)}",gpu="1"}} and (timestamp(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) > {prom.end})'
    assert prom.scalar(expr) < 0.05  # type: ignore[operator]


def test_node_down_leaves_no_samples_in_history_and_up_zero(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "node_down")
    during = prom.end - 40.5 * MIN
    assert (
        prom.query(
            f'count_over_time(DCGM_FI_DEV_GPU_UTIL{{Hostname="{prom.hostname(node)}"}}[9m])', during
        )
        == []
    )
    assert prom.scalar(f'up{{instance="{prom.instance(node, "dcgm")}"}}', during) == 0
    assert prom.scalar(f'up{{instance="{prom.instance(node, "dcgm")}"}}', prom.end - 30 * MIN) == 1


def test_node_down_now_makes_its_live_targets_fail(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "node_down", 1)
    live = f"(timestamp(up) > {prom.end})"
    down = {r["metric"]["instance"] for r in prom.query(f"up == 0 and {live}")}
    assert down == {prom.instance(node, "dcgm"), prom.instance(node, "node_ib")}


def test_ib_link_flap_counts_each_flap_and_shows_the_port_down(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "ib_link_flap")
    sel = f'instance="{prom.instance(node, "node_ib")}",device="mlx5_5"'
    before = prom.scalar(f"node_infiniband_link_downed_total{{{sel}}}", prom.end - 31 * MIN)
    after = prom.scalar(f"node_infiniband_link_downed_total{{{sel}}}", prom.end - 10 * MIN)
    assert after - before == 2  # type: ignore[operator]
    states = values_by(
        prom,
        f'min_over_time(node_infiniband_state_id{{instance="{prom.instance(node, "node_ib")}"}}[16m])',
        "device",
        prom.end - 14 * MIN,
    )
    assert states["mlx5_5"] == 1
    assert {d: v for d, v in states.items() if d != "mlx5_5"} == {
        **{f"mlx5_{i}": 4 for i in range(8) if i != 5},
        "mlx5_8": 4,  # the dual-port storage HCA (min over its ports 1 and 2)
        "i40iw0": 4,  # the iWARP device: active, though it has no IB counter
    }


def test_run_crash_restarts_pods_and_resumes_from_the_last_checkpoint(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, crash = scenario_prometheus, fault(scenario_prometheus, "run_crash")
    pods = f'kube_pod_container_status_restarts_total{{pod=~"{crash.run}-worker-.*"}}'
    assert set(values_by(prom, pods, "pod", crash.start - MIN).values()) == {0}
    assert set(values_by(prom, pods, "pod", crash.start + 10 * MIN).values()) == {1}
    ckpt = f'training_last_checkpoint_timestamp_seconds{{job_name="{crash.run}"}}'
    assert prom.scalar(ckpt, crash.start + 2 * MIN) < crash.start  # type: ignore[operator]
    nodes = prom.cluster.run_on(node_of(prom, "tensor_drift"), crash.start - MIN).nodes  # type: ignore[union-attr]
    regex = "|".join(prom.hostname(node) for node in nodes[1:])
    restarting = prom.scalar(
        f'max(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{Hostname=~"{regex}"}})', crash.start + 2 * MIN
    )
    assert restarting == 0


def test_ib_symbol_errors_climb_at_the_configured_rate_on_one_port(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "ib_symbol_errors")
    grown = values_by(
        prom,
        f'node_infiniband_symbol_error_total{{instance="{prom.instance(node, "node_ib")}"}} - node_infiniband_symbol_error_total{{instance="{prom.instance(node, "node_ib")}"}} offset 20m',
        "device",
        prom.end - 65 * MIN,
    )
    assert grown["mlx5_2"] == pytest.approx(0.5 * 20 * MIN, abs=60)
    assert {v for d, v in grown.items() if d != "mlx5_2"} == {0}


def test_ib_congestion_makes_xmit_wait_climb(scenario_prometheus: SimulatedPrometheus) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "ib_congestion")
    port = f'instance="{prom.instance(node, "node_ib")}",device="mlx5_0"'
    wait = f"rate(node_infiniband_port_transmit_wait_total{{{port}}}[5m])"
    sent = f"rate(node_infiniband_port_data_transmitted_bytes_total{{{port}}}[5m])"
    # Quantum units: one increment per 8 bytes lost. During the fault 25 % of the 50 GB/s link
    # is lost; after it, only the load-driven 2e-5 bytes lost per byte sent.
    during, load = prom.scalar(wait, prom.end - 70 * MIN), prom.scalar(sent, prom.end - 70 * MIN)
    assert during == pytest.approx((0.25 * 50e9 + 2e-5 * load) / 8, rel=1e-6)  # type: ignore[operator]
    after, load = prom.scalar(wait, prom.end - 20 * MIN), prom.scalar(sent, prom.end - 20 * MIN)
    assert after == pytest.approx(2e-5 * load / 8, rel=1e-6)  # type: ignore[operator]
    assert load > 1e9  # type: ignore[operator]


def test_ib_straggler_moves_far_less_than_its_run_peers(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "ib_straggler")
    rates = values_by(
        prom,
        'sum by (instance) (rate(node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0"}[5m]))',
        "instance",
        prom.end - 35 * MIN,
    )
    peer = rates[prom.instance(node_of(prom, "tensor_drift"), "node_ib")]
    assert rates[prom.instance(node, "node_ib")] < 0.3 * peer


def test_ib_counter_saturated_pegs_at_the_32_bit_maximum(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "ib_counter_saturated")
    waits = values_by(
        prom,
        f'node_infiniband_port_transmit_wait_total{{instance="{prom.instance(node, "node_ib")}"}}',
        "device",
        prom.end - 35 * MIN,
    )
    assert waits["mlx5_1"] == 4294967295
    assert waits["mlx5_0"] != 4294967295  # xmit_wait is 64-bit here: a busy port may pass 2^32


def test_nvlink_errors_grow_on_one_gpu(scenario_prometheus: SimulatedPrometheus) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "nvlink_errors")
    grown = values_by(
        prom,
        f'increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{Hostname="{prom.hostname(node)}"}}[10m])',
        "gpu",
        prom.end - 15 * MIN,
    )
    assert grown["5"] > 100
    assert {v for g, v in grown.items() if g != "5"} == {0}


def test_xid_holds_its_code_during_the_fault_only(scenario_prometheus: SimulatedPrometheus) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "xid")
    during = values_by(
        prom,
        f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{prom.hostname(node)}"}}',
        "gpu",
        prom.end - 60 * MIN,
    )
    assert during == {str(g): (79 if g == 2 else 0) for g in range(8)}
    assert (
        prom.scalar(
            f'DCGM_FI_DEV_XID_ERRORS{{Hostname="{prom.hostname(node)}",gpu="2"}}',
            prom.end - 40 * MIN,
        )
        == 0
    )


def test_pool_flip_taints_an_inference_node_as_training_then_back(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "pool_flip")
    taint = f'kube_node_spec_taint{{node="{node}",key="node-pool"}}'
    assert {r["metric"]["value"] for r in prom.query(taint, prom.end - 70 * MIN)} == {"training"}
    assert {r["metric"]["value"] for r in prom.query(taint, prom.end - 50 * MIN)} == {"inference"}


def test_kueue_stall_stops_admissions_while_pending_grows(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, stall = scenario_prometheus, fault(scenario_prometheus, "kueue_stall")
    queue = 'cluster_queue="cq-research"'
    admitted = f"kueue_admitted_workloads_total{{{queue}}}"
    assert prom.scalar(admitted, stall.end - MIN) == prom.scalar(admitted, stall.start + MIN)
    pending = f'kueue_pending_workloads{{{queue},status="active"}}'
    assert prom.scalar(pending, stall.end - MIN) >= prom.scalar(pending, stall.start + MIN) + 2  # type: ignore[operator]


def test_checkpoint_stall_freezes_the_checkpoint_gauges(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, stall = scenario_prometheus, fault(scenario_prometheus, "checkpoint_stall")
    gauge = f'training_last_checkpoint_timestamp_seconds{{job_name="{stall.run}"}}'
    frozen = prom.scalar(gauge, stall.start + 5 * MIN)
    assert frozen is not None and frozen < stall.start
    assert prom.scalar(gauge, stall.end - MIN) == frozen


def test_history_and_live_form_one_series_without_a_gap(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "tensor_drift")
    series = prom.query(
        f'DCGM_FI_DEV_GPU_UTIL{{instance="{prom.instance(node, "dcgm")}",gpu="0"}}[10m]'
    )
    assert len(series) == 1
    stamps = [float(t) for t, _v in series[0]["values"]]
    assert min(stamps) < prom.end < max(stamps)
    # The only hole is the backfill + Prometheus start-up time between the history's last sample
    # and the first live scrape; it stays far below the 5-minute lookback, so no query sees it.
    assert max(b - a for a, b in zip(stamps, stamps[1:], strict=False)) <= 120


def test_live_counters_continue_the_history_counters(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom, node = scenario_prometheus, node_of(scenario_prometheus, "tensor_drift")
    resets = prom.query(
        f'resets(node_infiniband_port_data_transmitted_bytes_total{{instance="{prom.instance(node, "node_ib")}"}}[10m])'
    )
    # 8 rail ports and the storage HCA's two (i40iw0 has no data counter)
    assert len(resets) == 10 and {float(r["value"][1]) for r in resets} == {0.0}
    assert (
        prom.query(f'count(DCGM_FI_DEV_GPU_UTIL{{instance="{prom.instance(node, "dcgm")}"}})')[0][
            "value"
        ][1]
        == "8"
    )
