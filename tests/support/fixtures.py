"""Pytest fixtures for integration tests; tests/conftest.py imports them.

`scenario_prometheus` is the one most tests want: a 32-node simulated cluster whose faults are the
union of every single-fault scenario (each on its own nodes and window), two hours of history
backfilled, and live scrapes every 2 s. Session-scoped: it starts once per test run.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from simulator import Cluster, ClusterSpec, Fault, FaultKind
from tests.support.prometheus import SimulatedPrometheus, require_prometheus, simulated_prometheus

HISTORY = timedelta(hours=2)
STEP = 30.0
HISTORY_FAMILIES = (
    "key,DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,"
    "node_infiniband_link_error_recovery_total,node_infiniband_port_errors_received_total,"
    "node_infiniband_physical_state_id"
)


def integration_faults(cluster: Cluster, epoch: datetime) -> list[Fault]:
    """One fault of each kind, on distinct nodes, placed in the history window or live.

    Offsets are minutes from the epoch (= the end of history = when live scraping begins).
    """
    w = lambda minutes: epoch + timedelta(minutes=minutes)  # noqa: E731
    start = epoch.timestamp()
    big = cluster.find_run(start - 6600, start + 1800, min_nodes=8)
    small = next(
        r
        for r in cluster.runs_at(start - 5700)
        if r.name != big.name
        and r.end > start - 900
        and r.admitted_at < start - 5700
        # checkpoint_stale fires after 3 usual intervals: they must fit the 50-minute stall.
        and 4 * r.period <= 2700
        # and it needs 3 checkpoints (its cadence) stored before the stall: the history
        # starts 2 h back, a run admitted late or with a long period may have only 2.
        and checkpoints_between(r, start - HISTORY.total_seconds(), start - 4200) >= 4
    )
    node = list(big.nodes)
    inference = [n.name for n in cluster.nodes if n.home_pool == "inference"]
    k = FaultKind
    return [
        Fault(k.TENSOR_DRIFT, w(-60), w(-30), nodes=[node[0]], gpus=[3]),
        Fault(k.TENSOR_DRIFT, w(-10), w(30), nodes=[node[1]], gpus=[1]),
        Fault(k.IB_LINK_FLAP, w(-30), w(-15), nodes=[node[2]], ports=[5], params={"flaps": 2}),
        Fault(k.IB_SYMBOL_ERRORS, w(-90), w(-60), nodes=[node[3]], ports=[2]),
        Fault(k.IB_CONGESTION, w(-90), w(-60), nodes=[node[4]]),
        Fault(k.IB_STRAGGLER, w(-50), w(-20), nodes=[node[5]]),
        Fault(k.IB_COUNTER_SATURATED, w(-45), w(-25), nodes=[node[6]], ports=[1]),
        Fault(k.NVLINK_ERRORS, w(-40), w(-10), nodes=[node[7]], gpus=[5]),
        Fault(k.XID, w(-70), w(-50), nodes=[node[0]], gpus=[2], params={"code": 79}),
        Fault(k.NODE_DOWN, w(-50), w(-40), nodes=[inference[0]]),
        Fault(k.NODE_DOWN, w(-5), w(30), nodes=[inference[1]]),
        Fault(k.POOL_FLIP, w(-80), w(-60), nodes=[inference[2]]),
        Fault(k.KUEUE_STALL, w(-100), w(-70), queue="cq-research"),
        Fault(k.RUN_CRASH, w(-80), run=big.name),
        Fault(k.CHECKPOINT_STALL, w(-70), w(-20), run=small.name),
    ]


def checkpoints_between(run: object, start: float, end: float) -> int:
    """How many checkpoints the simulated ``run`` completes in [start, end)."""
    stamps = set()
    for t in range(int(start), int(end), int(STEP)):
        checkpoint = run.last_checkpoint(t)  # type: ignore[attr-defined]
        if checkpoint is not None and start <= checkpoint.timestamp < end:
            stamps.add(checkpoint.timestamp)
    return len(stamps)


#: The seed of `scenario_prometheus`: its runs fit every integration fault. The simulator lays runs
#: out around the spec's epoch, so this holds at any time of day (tests/simulator/test_schedule.py).
INTEGRATION_SEED = 2


def integration_cluster(epoch: datetime) -> Cluster:
    """The 32-node cluster behind `scenario_prometheus`, its faults placed around ``epoch``."""
    spec = ClusterSpec(nodes=32, seed=INTEGRATION_SEED, epoch=epoch)
    return Cluster(replace(spec, faults=integration_faults(Cluster(spec), epoch)))


@pytest.fixture(scope="session")
def scenario_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedPrometheus]:
    """A real Prometheus with 2 h of simulator history and live scrapes (see module docstring)."""
    require_prometheus()
    end = float(int(time.time() // STEP) * STEP)
    cluster = integration_cluster(datetime.fromtimestamp(end, UTC))
    workdir = Path(tmp_path_factory.mktemp("prometheus"))
    with simulated_prometheus(cluster, workdir, HISTORY, STEP, "2s", HISTORY_FAMILIES, end) as prom:
        yield prom
