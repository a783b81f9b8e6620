"""Pure normalisation of the runs family: kube-state-metrics pod series → runs, pods, events.

A run is one top-level workload: a batch Job, or the JobSet, Kubeflow job (PyTorchJob,
MPIJob…), RayJob / RayCluster or LeaderWorkerSet its pods belong to (``pod_workloads``).

Input is the decoded answers of the ``queries.RUNS`` range queries, whose first
point (the window start) is the baseline. Output is what ``RunsSource.store``
writes. No I/O here, so every rule is unit-testable with recorded JSON.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runs.store import EventKind, JobState

from .identity import checked
from .prometheus import Series
from .stepseries import continuous_runs, counter_increases

PodKey = tuple[str, str]
JobKey = tuple[str, str]

#: Pod phases → the job state they imply, strongest first.
_STATE_ORDER = (
    ("Running", JobState.RUNNING),
    ("Pending", JobState.PENDING),
    ("Failed", JobState.FAILED),
    ("Succeeded", JobState.SUCCEEDED),
)
_EVENT_OF_STATE = {
    JobState.RUNNING: EventKind.STARTED,
    JobState.SUCCEEDED: EventKind.SUCCEEDED,
    JobState.FAILED: EventKind.FAILED,
}
#: Every ``reason`` kube_pod_status_reason emits → the run event it makes. The list is
#: kube-state-metrics' ``podStatusReasons`` (internal/store/pod.go, v2.19.0 and v2.20.0;
#: v2.13-v2.18 emit the first five without the Scheduler/Kubelet/Gated ones) plus "Other",
#: which v2.20.0 reports for an unlisted ``pod.status.reason``. A reason matches the pod's
#: status reason, a condition's reason (DisruptionTarget: PreemptionByScheduler,
#: TerminationByKubelet; PodScheduled: SchedulingGated) or a container's terminated reason.
EVENT_OF_POD_REASON = {
    "Evicted": EventKind.EVICTED,  # kubelet node-pressure eviction
    "TerminationByKubelet": EventKind.EVICTED,  # kubelet: node pressure / graceful shutdown
    "PreemptionByScheduler": EventKind.PREEMPTED,
    "NodeLost": EventKind.NODE_LOST,
    "Shutdown": EventKind.NODE_SHUTDOWN,  # graceful node shutdown
    "UnexpectedAdmissionError": EventKind.REJECTED,  # kubelet admission (device plugin, ...)
    "NodeAffinity": EventKind.REJECTED,  # kubelet admission: affinity no longer matches
    "SchedulingGated": EventKind.GATED,
    "Other": EventKind.POD_REASON,
}


def job_state(phases: Iterable[str]) -> str:
    """A job's state from its pods' phases: any running → running, then pending, failed, succeeded."""
    present = set(phases)
    for phase, state in _STATE_ORDER:
        if phase in present:
            return state
    return JobState.UNKNOWN


@dataclass
class PodObs:
    """A pod over the window."""

    job: JobKey
    first: float
    last: float
    phase: str = ""
    restarts: int | None = None


@dataclass
class JobObs:
    """A job over the window; ``state`` is its state at ``state_ts``."""

    first: float
    last: float
    local_queue: str = ""
    state: str = ""
    state_ts: float = 0.0
    kind: str = "Job"  # the top-level workload's kind


@dataclass
class RunsData:
    """Everything the runs store writes for one window (unix-second timestamps)."""

    jobs: dict[JobKey, JobObs] = field(default_factory=dict)
    pods: dict[PodKey, PodObs] = field(default_factory=dict)
    assignments: list[tuple[PodKey, str, float, float]] = field(default_factory=list)
    events: dict[tuple[JobKey, float, str, str], str] = field(default_factory=dict)
    started_hints: dict[JobKey, float] = field(default_factory=dict)
    nodes: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: Series whose node label does not fit (``"job: reason"`` → series), never truncated.
    unfit: dict[str, int] = field(default_factory=dict)

    def see_node(self, node: str, first: float, last: float) -> None:
        """Widen a node's first/last seen."""
        a, b = self.nodes.get(node, (first, last))
        self.nodes[node] = (min(a, first), max(b, last))


def _key(series: Series) -> PodKey | None:
    ns, pod = series.labels.get("namespace", "")[:253], series.labels.get("pod", "")[:253]
    return (ns, pod) if ns and pod else None


#: The Kubeflow training operators' own kinds: their pods are owned by the job itself.
KUBEFLOW_KINDS = frozenset({"PyTorchJob", "MPIJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"})


def pod_workloads(series: list[Series]) -> dict[PodKey, tuple[str, str]]:
    """Each pod's top-level workload (kind, name) from the controllers' labels in kube_pod_labels.

    JobSet (``jobset.sigs.k8s.io/jobset-name``) first: a JobSet's pods belong to its child Jobs.
    Then Kubeflow's ``training.kubeflow.org/job-name`` (the kind is the pod's controller, or
    MPIJob for an MPIJob's launcher Job), KubeRay's ``ray.io/originated-from-cr-name`` (the
    RayJob or RayService that made the RayCluster; its kind in ``ray.io/originated-from-crd``)
    then ``ray.io/cluster``, and LeaderWorkerSet's ``leaderworkerset.sigs.k8s.io/name``.
    """
    found: dict[PodKey, tuple[str, str]] = {}
    for item in series:
        key, labels = _key(item), item.labels
        if key is None:
            continue
        for label, kind in (
            ("label_jobset_sigs_k8s_io_jobset_name", "JobSet"),
            ("label_training_kubeflow_org_job_name", ""),  # the controller's kind, see run_of
            ("label_ray_io_originated_from_cr_name", labels.get("label_ray_io_originated_from_crd") or "RayJob"),
            ("label_ray_io_cluster", "RayCluster"),
            ("label_leaderworkerset_sigs_k8s_io_name", "LeaderWorkerSet"),
        ):  # fmt: skip
            if name := labels.get(label, "")[:253]:
                found[key] = (kind, name)
                break
    return found


def run_of(
    workload: tuple[str, str] | None, controller_kind: str, controller_name: str
) -> tuple[str, str] | None:
    """The (kind, name) of the run a pod belongs to; None: not a training pod (a plain StatefulSet)."""
    if workload is not None:
        kind, name = workload
        if not kind:  # a Kubeflow job: the pod's controller is it, or its launcher Job (MPIJob)
            kind = controller_kind if controller_kind in KUBEFLOW_KINDS else "MPIJob"
        return kind, name
    if controller_kind == "StatefulSet":
        return None
    return (controller_kind or "Job"), controller_name


def add_pod_info(
    data: RunsData,
    series: list[Series],
    step: float,
    workloads: Mapping[PodKey, tuple[str, str]] | None = None,
) -> int:
    """Pods, their runs and node intervals from kube_pod_info; returns points skipped.

    ``workloads``: each pod's top-level workload (``pod_workloads``); a pod without one is the
    run of its controller (a batch Job, a PyTorchJob…).
    """
    skipped = 0
    per_node: dict[tuple[PodKey, str], set[float]] = defaultdict(set)
    for item in series:
        key, owner = _key(item), item.labels.get("created_by_name", "")[:253]
        run = None
        if key is not None and owner:
            run = run_of((workloads or {}).get(key), item.labels.get("created_by_kind", ""), owner)
        if key is None or run is None:
            skipped += len(item.points)
            continue
        kind, job_name = run
        stamps = [ts for ts, _ in item.points]
        pod = data.pods.setdefault(key, PodObs((key[0], job_name), stamps[0], stamps[-1]))
        pod.first, pod.last = min(pod.first, stamps[0]), max(pod.last, stamps[-1])
        job = data.jobs.setdefault(pod.job, JobObs(pod.first, pod.last, kind=kind))
        job.first, job.last = min(job.first, pod.first), max(job.last, pod.last)
        node, problem = checked(item.labels.get("node"))
        if node:
            per_node[(key, node)].update(stamps)
        elif problem != "empty":  # a pod not scheduled yet has node=""
            reason = f"kube-state-metrics: kube_pod_info node label {problem}"
            data.unfit[reason] = data.unfit.get(reason, 0) + 1
    for (key, node), stamps in sorted(per_node.items()):
        for first, last in continuous_runs(stamps, step):
            data.assignments.append((key, node, first, last))
            data.see_node(node, first, last)
    return skipped


def add_queues(data: RunsData, series: list[Series]) -> None:
    """Each job's LocalQueue from its pods' ``label_kueue_x_k8s_io_queue_name``."""
    for item in series:
        key, queue = _key(item), item.labels.get("label_kueue_x_k8s_io_queue_name", "")
        if key in data.pods and queue:
            data.jobs[data.pods[key].job].local_queue = queue[:253]


def add_phases(data: RunsData, series: list[Series], start: float) -> None:
    """Pod phases; job states per step and their transitions as started/succeeded/failed events."""
    by_job_step: dict[JobKey, dict[float, list[str]]] = defaultdict(lambda: defaultdict(list))
    latest: dict[PodKey, tuple[float, str]] = {}
    for item in series:
        key, phase = _key(item), item.labels.get("phase", "")
        if key not in data.pods or not phase:
            continue
        for ts, _value in item.points:
            by_job_step[data.pods[key].job][ts].append(phase)
            if ts >= latest.get(key, (-1.0, ""))[0]:
                latest[key] = (ts, phase)
    for key, (_ts, phase) in latest.items():
        data.pods[key].phase = phase
    for job_key, steps in by_job_step.items():
        _job_transitions(data, job_key, steps, start)


def _job_transitions(
    data: RunsData, job_key: JobKey, steps: Mapping[float, list[str]], start: float
) -> None:
    previous: str | None = None
    for ts in sorted(steps):
        state = job_state(steps[ts])
        if ts <= start:
            if state == JobState.RUNNING:
                data.started_hints[job_key] = ts
        elif state != previous and state in _EVENT_OF_STATE:
            data.events[(job_key, ts, _EVENT_OF_STATE[state], "")] = ""
        previous = state
        job = data.jobs[job_key]
        if ts >= job.state_ts:
            job.state, job.state_ts = state, ts


def add_restarts(
    data: RunsData, series: list[Series], start: float, reasons: Mapping[PodKey, str]
) -> None:
    """A rise of a pod's restart count is a crash: one ``restart`` event at that step."""
    for item in series:
        key = _key(item)
        if key not in data.pods or not item.points:
            continue
        pod = data.pods[key]
        pod.restarts = int(item.points[-1][1])
        for ts, increase in counter_increases(item.points, start):
            if increase > 0:
                detail = f"restart count {_count_at(item, ts)}"
                if reasons.get(key):
                    detail += f"; last terminated: {reasons[key]}"
                data.events[(pod.job, ts, EventKind.RESTART, key[1])] = detail[:500]


def _count_at(item: Series, ts: float) -> int:
    return int(next(v for t, v in item.points if t == ts))


def add_reasons(data: RunsData, series: list[Series], start: float, step: float) -> None:
    """Each pod status reason (kube_pod_status_reason == 1) as an event at the first step seen;
    the detail is the reason as KSM names it."""
    for item in series:
        key, kind = _key(item), EVENT_OF_POD_REASON.get(item.labels.get("reason", ""))
        if key not in data.pods or kind is None:
            continue
        stamps = [ts for ts, _ in item.points]
        for first, _last in continuous_runs(stamps, step):
            if first > start:
                data.events[(data.pods[key].job, first, kind, key[1])] = item.labels["reason"]


def terminated_reasons(series: list[Series]) -> dict[PodKey, str]:
    """The last terminated reason of each pod's containers (newest point wins)."""
    reasons: dict[PodKey, tuple[float, str]] = {}
    for item in series:
        key = _key(item)
        if key is None or not item.points or not item.labels.get("reason"):
            continue
        ts = item.points[-1][0]
        if ts >= reasons.get(key, (-1.0, ""))[0]:
            reasons[key] = (ts, item.labels["reason"][:100])
    return {key: reason for key, (_ts, reason) in reasons.items()}
