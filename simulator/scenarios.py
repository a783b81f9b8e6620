"""Named scenarios: ready-made fault lists, anchored at a chosen instant.

Every single-fault scenario is named after its fault kind and lasts 30 minutes from the anchor;
`ib_congestion_leaf` / `ib_congestion_run` congest every port under one leaf switch / of one run;
the `gpu_*` hardware scenarios each hit one GPU of a run's node (docs/simulator.md "Hardware faults");
`busy_healthy` has no fault but runs every job at line rate (xmit_wait rising with load, evenly)
and admits each next workload a minute after it is queued;
`demo` mixes most kinds over the day before the anchor and the hour after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from simulator.faults import Fault, FaultKind
from simulator.model import Cluster
from simulator.schedule import Run
from simulator.spec import ClusterSpec
from simulator.topology import INFERENCE

WINDOW = timedelta(minutes=30)
LINE_RATE = 48e9  # bytes/s per port: 96 % of an NDR link (the per-port jitter stays below 50 GB/s)
RUN_KINDS = (FaultKind.RUN_CRASH, FaultKind.CHECKPOINT_STALL)
#: Faults whose rule judges only GPUs of a run (gpu_throttle): the scenario needs one.
NEEDS_RUN = (*RUN_KINDS, FaultKind.GPU_THROTTLE)


class Scene:
    """What a scenario builder can look at: a fault-free cluster and the anchor instant."""

    def __init__(self, spec: ClusterSpec, at: datetime) -> None:
        self.cluster = Cluster(replace(spec, faults=()))
        self.at = at

    def when(self, minutes: float) -> datetime:
        """The anchor shifted by minutes (negative: before)."""
        return self.at + timedelta(minutes=minutes)

    def run(self, minutes: float = 0.0, length: timedelta = WINDOW) -> Run:
        """A run that is running throughout [anchor+minutes, +length]."""
        start = self.when(minutes).timestamp()
        return self.cluster.find_run(start, start + length.total_seconds())

    def maybe_run(self, minutes: float = 0.0, length: timedelta = WINDOW) -> Run | None:
        """Like `run`, or None when no run spans the window (small clusters, unlucky seeds)."""
        try:
            return self.run(minutes, length)
        except LookupError:
            return None

    def inference_nodes(self) -> list[str]:
        """The inference pool's nodes."""
        return [n.name for n in self.cluster.nodes if n.home_pool == INFERENCE]

    def training_node(self, fraction: float) -> str:
        """A training node picked by its position in the training pool (0..1)."""
        names = [n.name for n in self.cluster.nodes if n.slot is not None]
        return names[min(len(names) - 1, int(fraction * len(names)))]


def _single(kind: str) -> Callable[[Scene], list[Fault]]:
    def build(scene: Scene) -> list[Fault]:
        start, end = scene.at, scene.at + WINDOW
        run = scene.run() if kind in NEEDS_RUN else scene.maybe_run()
        nodes = run.nodes if run else (scene.training_node(0.0),)
        node = nodes[0]
        by_kind: dict[str, Fault] = {
            FaultKind.TENSOR_DRIFT: Fault(kind, start, end, nodes=[node], gpus=[3]),
            FaultKind.IB_SYMBOL_ERRORS: Fault(kind, start, end, nodes=[node], ports=[2]),
            FaultKind.IB_LINK_FLAP: Fault(kind, start, end, nodes=[node], ports=[5]),
            FaultKind.IB_CONGESTION: Fault(kind, start, end, nodes=[node], ports=[4]),
            FaultKind.IB_STRAGGLER: Fault(kind, start, end, nodes=[nodes[-1]]),
            FaultKind.IB_COUNTER_SATURATED: Fault(kind, start, end, nodes=[node], ports=[1]),
            FaultKind.NVLINK_ERRORS: Fault(kind, start, end, nodes=[node], gpus=[5]),
            FaultKind.XID: Fault(kind, start, end, nodes=[node], gpus=[2], params={"code": 79}),
            FaultKind.NODE_DOWN: Fault(kind, start, end, nodes=[scene.inference_nodes()[0]]),
            FaultKind.KUEUE_STALL: Fault(kind, start, end, queue="cq-research"),
            FaultKind.POOL_FLIP: Fault(kind, start, end, nodes=scene.inference_nodes()[:4]),
            # Hardware health: each on its own GPU of the node (XID uses 2, drift 3, NVLink 5).
            FaultKind.GPU_ECC_DBE: Fault(kind, start, end, nodes=[node], gpus=[0]),
            FaultKind.GPU_ROW_REMAP_FAILURE: Fault(kind, start, end, nodes=[node], gpus=[1]),
            FaultKind.GPU_ROW_REMAP_PENDING: Fault(kind, start, end, nodes=[node], gpus=[4]),
            FaultKind.GPU_THROTTLE: Fault(kind, start, end, nodes=[node], gpus=[6]),
            FaultKind.GPU_PCIE_REPLAY: Fault(kind, start, end, nodes=[node], gpus=[7]),
        }
        if run is not None:
            by_kind[FaultKind.RUN_CRASH] = Fault(kind, start, run=run.name)
            by_kind[FaultKind.CHECKPOINT_STALL] = Fault(kind, start, end, run=run.name)
        return [by_kind[kind]]

    return build


def _demo(scene: Scene) -> list[Fault]:
    """A day with something on every page: drift, IB trouble, XIDs, a crash, a stall, a flip."""
    w, k = scene.when, FaultKind
    node = scene.training_node
    inference = scene.inference_nodes()
    crash_run = scene.maybe_run(-540, timedelta(minutes=60))
    stall_run = scene.maybe_run(-120, timedelta(minutes=150))
    faults = [
        Fault(k.TENSOR_DRIFT, w(-180), w(120), nodes=[node(0.12)], gpus=[3]),
        Fault(k.IB_SYMBOL_ERRORS, w(-360), w(360), nodes=[node(0.25)], ports=[2]),
        Fault(k.IB_LINK_FLAP, w(-60), w(-30), nodes=[node(0.40)], ports=[5]),
        Fault(k.IB_LINK_FLAP, w(10), w(25), nodes=[node(0.40)], ports=[5], params={"flaps": 2}),
        Fault(k.IB_CONGESTION, w(-600), w(-480), nodes=[node(0.70 + i / 48) for i in range(8)]),
        Fault(k.IB_STRAGGLER, w(-300), w(-180), nodes=[node(0.05)]),
        Fault(k.IB_COUNTER_SATURATED, w(-720), None, nodes=[node(0.5)], ports=[1]),
        Fault(k.NVLINK_ERRORS, w(-240), w(60), nodes=[node(0.62)], gpus=[5]),
        Fault(k.XID, w(-120), None, nodes=[node(0.85)], gpus=[2], params={"code": 79}),
        Fault(k.XID, w(-1200), w(-1080), nodes=[node(0.30)], gpus=[0], params={"code": 48}),
        Fault(k.NODE_DOWN, w(-240), w(-210), nodes=[inference[1 % len(inference)]]),
        Fault(k.NODE_DOWN, w(-20), w(40), nodes=[inference[2 % len(inference)]]),
        Fault(k.KUEUE_STALL, w(-420), w(-300), queue="cq-research"),
        Fault(k.POOL_FLIP, w(-900), w(-780), nodes=inference[-4:]),
    ]
    if crash_run:
        crash = {"after_checkpoint_seconds": 420}
        faults.append(Fault(k.RUN_CRASH, w(-530), run=crash_run.name, params=crash))
    if stall_run:
        faults.append(Fault(k.CHECKPOINT_STALL, w(-110), w(30), run=stall_run.name))
    return faults


def _congested_leaf(scene: Scene) -> list[Fault]:
    """Every port under the first leaf switch of rail 3 (rail r of a group: port r of its nodes)."""
    switch = next(s for s in scene.cluster.topology.switches if s.group == 0 and s.rail == 3)
    nodes = [n.name for n in scene.cluster.nodes if n.group == switch.group]
    return [Fault(FaultKind.IB_CONGESTION, scene.at, scene.at + WINDOW, nodes=nodes, ports=[3])]


def _congested_run(scene: Scene) -> list[Fault]:
    """Every port of every node of the smallest of the runs running throughout the window.

    Another run must be running too: a run alone is the whole busy fabric, and wait that no
    other busy port can be compared with is indistinguishable from load (ib_congestion).
    """
    start, end = scene.at.timestamp(), (scene.at + WINDOW).timestamp()
    spanning = [r for r in scene.cluster.runs_at(start) if r.admitted_at < start and end < r.end]
    if len(scene.cluster.runs_at(start)) < 2 or not spanning:
        raise LookupError("ib_congestion_run needs two runs at once; pick another epoch or seed")
    run = min(spanning, key=lambda r: (len(r.nodes), r.name))
    return [Fault(FaultKind.IB_CONGESTION, scene.at, scene.at + WINDOW, nodes=list(run.nodes))]


SCENARIOS: dict[str, Callable[[Scene], list[Fault]]] = {
    kind: _single(kind) for kind in FaultKind.ALL
}
SCENARIOS["ib_congestion_leaf"] = _congested_leaf
SCENARIOS["ib_congestion_run"] = _congested_run
SCENARIOS["demo"] = _demo
SCENARIOS["none"] = lambda scene: []
SCENARIOS["busy_healthy"] = lambda scene: []
#: Cluster settings a scenario implies beyond its faults.
SPEC_OVERRIDES: dict[str, dict[str, object]] = {
    # Busy: every run at line rate, and the next workload admitted a minute after its cycle starts.
    "busy_healthy": {"run_bandwidth": LINE_RATE, "admission_gap_seconds": 60.0},
}


def scenario_faults(name: str, spec: ClusterSpec, at: datetime | None = None) -> list[Fault]:
    """The faults of a named scenario, anchored at `at` (default: the spec's epoch)."""
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
    return SCENARIOS[name](Scene(spec, at or spec.epoch))


def with_scenario(spec: ClusterSpec, name: str, at: datetime | None = None) -> ClusterSpec:
    """The spec with the scenario's faults added to its own (and its settings, e.g. busy_healthy's load)."""
    faults = [*spec.faults, *scenario_faults(name, spec, at)]
    return replace(spec, faults=faults, **SPEC_OVERRIDES.get(name, {}))  # type: ignore[arg-type]
