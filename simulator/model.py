"""The cluster model: what every node is doing at any instant, as a pure function of time."""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.faults import FaultIndex, FaultKind
from simulator.rng import entity_key, unit
from simulator.schedule import SUCCEEDED, Run, SlotSchedule
from simulator.spec import ClusterSpec
from simulator.topology import (
    INFERENCE,
    INFERENCE_DEPLOYMENT,
    INFERENCE_NAMESPACE,
    TRAINING,
    Node,
    Topology,
)

TICK = 15.0  # seconds between fresh noise draws (the exporters' collect interval)
REBOOT_SECONDS = 10 * 86400.0  # nodes and controllers restart (counters reset) this often
POD_LINGER = 600.0  # finished pods stay visible in kube-state-metrics this long
P_IDLE = 70.0
INFERENCE_BANDWIDTH = 2e9
INFERENCE_POWER = 420.0
DAY = 86400.0


@dataclass(frozen=True)
class Pod:
    """A Kubernetes pod as kube-state-metrics would describe it."""

    namespace: str
    name: str
    uid: str
    container: str
    owner_kind: str
    owner_name: str
    local_queue: str | None
    priority_class: str
    start: float
    phase: str
    restarts: int
    # More labels kube_pod_labels carries (Kubernetes label name → value), e.g. a JobSet's.
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class NodeState:
    """One node at one instant: pool, run, activity and the counters' reset point."""

    node: Node
    t: float
    tick: int
    up: bool
    pool: str
    run: Run | None
    activity: float
    tensor_level: float
    bandwidth: float
    power_busy: float
    pod: Pod | None
    boot: float


class Cluster:
    """A simulated cluster: `Cluster(ClusterSpec(nodes=64, seed=1, faults=[...]))`."""

    def __init__(self, spec: ClusterSpec | None = None) -> None:
        self.spec = spec or ClusterSpec()
        self.topology = Topology(self.spec)
        self.faults = FaultIndex(self.spec.faults, self.spec.epoch_seconds)
        self.schedules = [
            SlotSchedule(slot, self.spec.seed, self.faults, self.spec.hostile_label, self.spec)
            for slot in self.topology.slots
        ]
        seed = self.spec.seed
        # Every clock of the model counts from the spec's epoch: the same seed is the same
        # cluster around its epoch at any hour (schedules, reboots, daily load, noise).
        self.origin = origin = self.spec.epoch_seconds
        self.keys = [entity_key(seed, n.name) for n in self.topology.nodes]
        self._phase = [unit(seed, "diurnal", n.index) * 2 * math.pi for n in self.topology.nodes]
        self._boot_phase = [
            origin + unit(seed, "boot", n.index) * REBOOT_SECONDS for n in self.topology.nodes
        ]
        self._states: dict[tuple[int, float], NodeState] = {}
        self._since_boot: dict[tuple[int, float], tuple[float, float, float]] = {}

    @property
    def nodes(self) -> list[Node]:
        """All nodes, in index order."""
        return self.topology.nodes

    def node(self, name: str) -> Node:
        """A node by name."""
        return self.topology.by_name[name]

    # --- pools, liveness, reboots -------------------------------------------------------------

    def pool(self, node: Node, t: float) -> str:
        """The pool the node's taint puts it in at t (pool_flip swaps it)."""
        if self.faults.active_on_node(FaultKind.POOL_FLIP, node.name, t):
            return INFERENCE if node.home_pool == TRAINING else TRAINING
        return node.home_pool

    def is_up(self, node: Node, t: float) -> bool:
        """False while a node_down fault keeps the node's exporters from answering."""
        return not self.faults.active_on_node(FaultKind.NODE_DOWN, node.name, t)

    def boot(self, node: Node, t: float) -> float:
        """When the node (and its exporters) last started: counters count from here."""
        phase = self._boot_phase[node.index]
        boot = phase + math.floor((t - phase) / REBOOT_SECONDS) * REBOOT_SECONDS
        for fault in self.faults.on_node(FaultKind.NODE_DOWN, node.name):
            if boot < fault.end <= t:
                boot = fault.end
        return boot

    def controller_boot(self, t: float) -> float:
        """When kube-state-metrics / Kueue / the IB exporter last restarted."""
        phase = self.origin + unit(self.spec.seed, "controller") * REBOOT_SECONDS
        return phase + math.floor((t - phase) / REBOOT_SECONDS) * REBOOT_SECONDS

    # --- runs ----------------------------------------------------------------------------------

    def schedule_of(self, node: Node) -> SlotSchedule | None:
        """The slot schedule the node belongs to (None for inference nodes)."""
        return None if node.slot is None else self.schedules[node.slot]

    def run_on(self, node_name: str, t: float) -> Run | None:
        """The run admitted on this node at t (queued or finished runs excluded)."""
        schedule = self.schedule_of(self.node(node_name))
        run = schedule.run_at(t) if schedule else None
        if run is None or not run.admitted_at <= t < run.end:
            return None
        return run

    def runs_at(self, t: float) -> list[Run]:
        """Every run admitted and not yet ended at t."""
        runs = [s.run_at(t) for s in self.schedules]
        return [r for r in runs if r is not None and r.admitted_at <= t < r.end]

    def find_run(self, start: float, end: float, min_nodes: int = 1) -> Run:
        """A fault-free-looking run that is running over all of [start, end] (largest first)."""
        for schedule in sorted(self.schedules, key=lambda s: -len(s.slot.nodes)):
            run = schedule.run_at(start)
            if run and len(run.nodes) >= min_nodes and run.admitted_at < start and end < run.end:
                return run
        raise LookupError("no run spans the requested window; pick another window or seed")

    # --- node state ----------------------------------------------------------------------------

    def state(self, node: Node, t: float) -> NodeState:
        """The node's state at t (cached: every dialect asks for the same instants)."""
        key = (node.index, t)
        cached = self._states.get(key)
        if cached is None:
            if len(self._states) > 8 * len(self.nodes) + 64:
                self._states.clear()
            cached = self._states[key] = self._compute_state(node, t)
        return cached

    def _compute_state(self, node: Node, t: float) -> NodeState:
        pool = self.pool(node, t)
        schedule = self.schedule_of(node)
        run, pod = None, None
        activity, level, bandwidth, power = 0.0, 0.0, 0.0, P_IDLE
        if schedule is not None:
            cycle_run = schedule.run_at(t)
            if cycle_run and cycle_run.admitted_at <= t < cycle_run.end + POD_LINGER:
                pod = self._training_pod(node, cycle_run, t)
                if t < cycle_run.end:
                    run = cycle_run
                    activity = run.activity(t)
                    level, bandwidth, power = run.tensor_level, run.bandwidth, run.power_busy
        elif pool == INFERENCE:
            activity = self._inference_activity(node, t)
            level, bandwidth, power = 0.35, INFERENCE_BANDWIDTH, INFERENCE_POWER
            pod = self._inference_pod(node, t)
        return NodeState(
            node=node,
            t=t,
            tick=int((t - self.origin) // TICK),
            up=self.is_up(node, t),
            pool=pool,
            run=run,
            activity=activity,
            tensor_level=level,
            bandwidth=bandwidth,
            power_busy=power,
            pod=pod,
            boot=self.boot(node, t),
        )

    def _training_pod(self, node: Node, run: Run, t: float) -> Pod:
        worker = run.nodes.index(node.name)
        if t < run.end:
            phase = "Running"
        else:
            phase = "Succeeded" if run.outcome == SUCCEEDED else "Failed"
        # A JobSet's pods belong to its child Job <jobset>-<replicatedJob>-<index> (JobSet's
        # naming) and carry the JobSet's labels (jobset.sigs.k8s.io, api/jobset/v1alpha2).
        jobset = run.queue.cluster_queue in self.spec.jobset_queues
        owner = f"{run.name}-workers-0" if jobset else run.name
        labels = (
            (("jobset.sigs.k8s.io/jobset-name", run.name),
             ("jobset.sigs.k8s.io/replicatedjob-name", "workers"))
            if jobset else ()
        )  # fmt: skip
        return Pod(
            namespace=run.queue.namespace,
            name=f"{owner}-{worker}" if jobset else f"{run.name}-worker-{worker}",
            uid=_uid(self.spec.seed, run.name, worker),
            container="trainer",
            owner_kind="Job",
            owner_name=owner,
            labels=labels,
            local_queue=run.queue.local_queue,
            priority_class=run.queue.priority_class,
            start=run.admitted_at,
            phase=phase,
            restarts=sum(1 for c in run.crashes if c <= t),
        )

    def _inference_pod(self, node: Node, t: float) -> Pod:
        replicaset = f"{INFERENCE_DEPLOYMENT}-7d9f8c6b5"
        suffix = f"{int(unit(self.spec.seed, 'pod', node.index) * 36**5):05x}"[-5:]
        return Pod(
            namespace=INFERENCE_NAMESPACE,
            name=f"{replicaset}-{suffix}",
            uid=_uid(self.spec.seed, replicaset, node.index),
            container="server",
            owner_kind="ReplicaSet",
            owner_name=replicaset,
            local_queue=None,
            priority_class="inference",
            start=self.boot(node, t) + 120.0,
            phase="Running",
            restarts=0,
        )

    def _inference_activity(self, node: Node, t: float) -> float:
        since = t - self.origin
        return 0.45 + 0.3 * math.sin(2 * math.pi * since / DAY + self._phase[node.index])

    def _inference_work(self, node: Node, a: float, b: float) -> float:
        phase, k = self._phase[node.index], 2 * math.pi / DAY
        a, b = a - self.origin, b - self.origin
        return 0.45 * (b - a) - 0.3 / k * (math.cos(k * b + phase) - math.cos(k * a + phase))

    def since_boot(self, state: NodeState) -> tuple[float, float, float]:
        """`integral` from the node's boot to the state's instant (cached)."""
        key = (state.node.index, state.t)
        cached = self._since_boot.get(key)
        if cached is None:
            if len(self._since_boot) > 8 * len(self.nodes) + 64:
                self._since_boot.clear()
            cached = self._since_boot[key] = self.integral(state.node, state.boot, state.t)
        return cached

    def integral(self, node: Node, a: float, b: float) -> tuple[float, float, float]:
        """(work seconds, bytes per IB port, extra GPU joules) the node did over [a, b)."""
        if b <= a:
            return (0.0, 0.0, 0.0)
        schedule = self.schedule_of(node)
        if schedule is not None:
            return schedule.integral(a, b)
        w = self._inference_work(node, a, b)
        for flip in self.faults.on_node(FaultKind.POOL_FLIP, node.name):
            lo, hi = max(a, flip.start), min(b, flip.end)
            if hi > lo:
                w -= self._inference_work(node, lo, hi)
        return (w, w * INFERENCE_BANDWIDTH, w * (INFERENCE_POWER - P_IDLE))


def _uid(seed: int, *keys: object) -> str:
    h = f"{int(unit(seed, 'uid', *keys) * 2**64):016x}{int(unit(seed, 'uid2', *keys) * 2**64):016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
