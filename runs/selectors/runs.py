"""Runs with their nodes, GPUs, events and goodput: the read side of the runs pages and API.

Every loader works on a batch of jobs with a fixed number of queries (assignments, events,
checkpoints, GPUs per node, resumes), whatever the batch size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Q, QuerySet

from ingest import run_series

from ..goodput import CheckpointMark, Goodput, Interruption, compute_goodput, first_busy
from ..models import Checkpoint, Job, PodAssignment, RunEvent

#: Events that stop a run's progress; all but FAILED are followed by a restart.
INTERRUPTIONS = (
    RunEvent.Kind.RESTART,
    RunEvent.Kind.EVICTED,
    RunEvent.Kind.PREEMPTED,
    RunEvent.Kind.FAILED,
    RunEvent.Kind.NODE_LOST,
    RunEvent.Kind.NODE_SHUTDOWN,
    RunEvent.Kind.REJECTED,
)
#: Events counted as failures for MTBF (evictions and preemptions are the scheduler's choice).
FAILURES = (RunEvent.Kind.RESTART, RunEvent.Kind.FAILED, RunEvent.Kind.NODE_LOST)
EVICTIONS = (RunEvent.Kind.EVICTED, RunEvent.Kind.PREEMPTED, RunEvent.Kind.NODE_SHUTDOWN)
#: After an interruption the run is productive again at the first step its median GPU util reaches this.
BUSY_UTIL_PERCENT = 50.0
#: Nodes with no GPU samples in the window are assumed to have this many GPUs.
DEFAULT_GPUS_PER_NODE = 8
MAX_RUNS = 200


@dataclass(frozen=True)
class Holding:
    """A run held a node from ``start`` to ``end`` (merged pod assignments)."""

    node_id: int
    node: str
    start: datetime
    end: datetime


@dataclass
class RunFacts:
    """Everything known about one run, loaded in bulk."""

    job: Job
    holdings: list[Holding] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    checkpoints: list[CheckpointMark] = field(default_factory=list)
    gpus: int = 0
    goodput: Goodput | None = None

    @property
    def nodes(self) -> list[str]:
        return sorted({holding.node for holding in self.holdings})

    @property
    def start(self) -> datetime:
        """When the run first held a node (or, pushed-only, its first checkpoint)."""
        if self.holdings:
            return min(h.start for h in self.holdings)
        return self.checkpoints[0].ts if self.checkpoints else self.job.first_seen

    @property
    def end(self) -> datetime:
        """The last moment anything was seen of the run."""
        latest = [
            self.job.last_seen,
            *(c.ts for c in self.checkpoints[-1:]),
            *(e.ts for e in self.events[-1:]),
        ]
        if self.holdings:
            latest.append(max(h.end for h in self.holdings))
        return max([*latest, self.start])

    @property
    def restarts(self) -> int:
        """Crashes of the run (every pod of a gang restarts at once: one crash per timestamp)."""
        return sum(1 for event in self.interruptions if event.kind == RunEvent.Kind.RESTART)

    @property
    def evictions(self) -> list[RunEvent]:
        return [event for event in self.interruptions if event.kind in EVICTIONS]

    @property
    def interruptions(self) -> list[RunEvent]:
        """Interruptions of the whole run: one per (time, kind), whichever pods reported it."""
        seen: set[tuple[datetime, str]] = set()
        unique = []
        for event in self.events:
            if event.kind in INTERRUPTIONS and (event.ts, event.kind) not in seen:
                seen.add((event.ts, event.kind))
                unique.append(event)
        return unique


def filter_jobs(
    *,
    queue: str = "",
    state: str = "",
    node: str = "",
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[Job]:
    """Runs matching the list filters (queue = LocalQueue or ClusterQueue name), newest first."""
    jobs = Job.objects.select_related("cluster_queue").order_by("-first_seen", "namespace", "name")
    if queue:
        jobs = jobs.filter(Q(local_queue=queue) | Q(cluster_queue__name=queue))
    if state:
        jobs = jobs.filter(state=state)
    if node:
        jobs = jobs.filter(
            pk__in=PodAssignment.objects.filter(node__name=node).values("pod__job_id")
        )
    if since is not None:
        jobs = jobs.filter(last_seen__gte=since)
    if until is not None:
        jobs = jobs.filter(first_seen__lte=until)
    return jobs


def _merge(rows: Sequence[dict[str, object]]) -> list[Holding]:
    """Merge overlapping assignments of the same node (several pods of a run on one node)."""
    by_node: dict[tuple[int, str], list[tuple[datetime, datetime]]] = defaultdict(list)
    for row in rows:
        by_node[(row["node_id"], row["node__name"])].append((row["first_seen"], row["last_seen"]))  # type: ignore[index]
    holdings = []
    for (node_id, node), spans in by_node.items():
        spans.sort()
        lo, hi = spans[0]
        for start, end in spans[1:]:
            if start > hi:
                holdings.append(Holding(node_id, node, lo, hi))
                lo = start
            hi = max(hi, end)
        holdings.append(Holding(node_id, node, lo, hi))
    return sorted(holdings, key=lambda h: (h.start, h.node))


def peak_gpus(holdings: Sequence[Holding], per_node: dict[int, int]) -> int:
    """The most GPUs the run held at once (a sweep over its node holdings)."""
    edges = []
    for holding in holdings:
        gpus = per_node.get(holding.node_id, DEFAULT_GPUS_PER_NODE)
        edges += [(holding.start, 1, gpus), (holding.end, 0, -gpus)]
    held = peak = 0
    # At equal times starts come first: holdings are closed intervals of ingest steps.
    for _, _, delta in sorted(edges, key=lambda e: (e[0], -e[1])):
        held += delta
        peak = max(peak, held)
    return peak


def resume_times(runs: Sequence[RunFacts]) -> dict[tuple[int, int], datetime | None]:
    """When each interruption's run was busy again, keyed by (job id, event id); one query."""
    windows, rows = {}, []
    for run in runs:
        interruptions = run.interruptions
        for i, event in enumerate(interruptions):
            if event.kind == RunEvent.Kind.FAILED:
                continue
            hi = interruptions[i + 1].ts if i + 1 < len(interruptions) else run.end
            windows[event.pk] = (run.job.pk, event.ts, hi)
            rows += [
                (event.pk, h.node_id, max(event.ts, h.start), min(hi, h.end))
                for h in run.holdings
                if h.end > event.ts and h.start < hi
            ]
    series = run_series.median_util(rows)
    resumes: dict[tuple[int, int], datetime | None] = {}
    for event_id, (job_id, crash, hi) in windows.items():
        samples = series.get(event_id)
        # No samples: restart time unknown (counted as 0). Samples but never busy: restarting until hi.
        resumes[(job_id, event_id)] = (
            (first_busy(samples, crash, BUSY_UTIL_PERCENT) or hi) if samples else None
        )
    return resumes


def _goodput(run: RunFacts, resumes: dict[tuple[int, int], datetime | None]) -> Goodput:
    interruptions = [
        Interruption(
            ts=event.ts,
            kind=event.kind,
            detail=event.detail,
            resumed_at=resumes.get((run.job.pk, event.pk))
            if event.kind != RunEvent.Kind.FAILED
            else None,
        )
        for event in run.interruptions
    ]
    return compute_goodput(run.start, run.end, run.checkpoints, interruptions)


def load_runs(jobs: Sequence[Job]) -> list[RunFacts]:
    """Holdings, events, checkpoints, GPU count and goodput of each job (a fixed number of queries)."""
    runs = {job.pk: RunFacts(job=job) for job in jobs}
    if not runs:
        return []
    assignments: dict[int, list[dict[str, object]]] = defaultdict(list)
    for row in PodAssignment.objects.filter(pod__job_id__in=runs).values(
        "pod__job_id", "node_id", "node__name", "first_seen", "last_seen"
    ):
        assignments[row["pod__job_id"]].append(row)
    for job_id, rows in assignments.items():
        runs[job_id].holdings = _merge(rows)
    for event in RunEvent.objects.filter(job_id__in=runs).order_by("ts", "pk"):
        runs[event.job_id].events.append(event)
    for job_id, step, ts, duration in (
        Checkpoint.objects.filter(job_id__in=runs)
        .order_by("ts")
        .values_list("job_id", "step", "ts", "duration_seconds")
    ):
        runs[job_id].checkpoints.append(CheckpointMark(ts=ts, step=step, duration_seconds=duration))
    _fill_gpus(list(runs.values()))
    resumes = resume_times(list(runs.values()))
    for run in runs.values():
        run.goodput = _goodput(run, resumes)
    return [runs[job.pk] for job in jobs]


def _fill_gpus(runs: Sequence[RunFacts]) -> None:
    holdings = [h for run in runs for h in run.holdings]
    if not holdings:
        return
    per_node = run_series.gpus_per_node(
        sorted({h.node_id for h in holdings}),
        min(h.start for h in holdings),
        max(h.end for h in holdings),
    )
    for run in runs:
        run.gpus = peak_gpus(run.holdings, per_node)


def get_run(namespace: str, name: str) -> RunFacts | None:
    """One run by namespace and name, fully loaded; None if unknown."""
    job = Job.objects.select_related("cluster_queue").filter(namespace=namespace, name=name).first()
    return load_runs([job])[0] if job else None


def list_runs(jobs: QuerySet[Job], limit: int = MAX_RUNS) -> list[RunFacts]:
    """The first ``limit`` runs of a filtered queryset, loaded."""
    return load_runs(list(jobs[:limit]))


def failure_population(since: datetime) -> list[tuple[int, float, int]]:
    """(GPUs, wall seconds, failures) of every run that held nodes since ``since``: the MTBF base."""
    jobs = list(
        Job.objects.filter(
            pk__in=PodAssignment.objects.filter(last_seen__gte=since).values("pod__job_id")
        )
        .annotate(failures=Count("events__ts", distinct=True, filter=Q(events__kind__in=FAILURES)))
        .only("pk", "first_seen", "last_seen")
    )
    rows: dict[int, list[dict[str, object]]] = defaultdict(list)
    for row in PodAssignment.objects.filter(pod__job_id__in=[j.pk for j in jobs]).values(
        "pod__job_id", "node_id", "node__name", "first_seen", "last_seen"
    ):
        rows[row["pod__job_id"]].append(row)
    facts = [RunFacts(job=job, holdings=_merge(rows.get(job.pk, []))) for job in jobs]
    _fill_gpus(facts)
    return [
        (run.gpus, (run.end - run.start).total_seconds(), run.job.failures)  # type: ignore[attr-defined]
        for run in facts
    ]


def runs_on_node(node_id: int, limit: int = 50) -> list[dict[str, Any]]:
    """Runs whose pods held the node, newest first: namespace, job, pod, when."""
    assignments = (
        PodAssignment.objects.filter(node_id=node_id)
        .select_related("pod__job")
        .order_by("-last_seen")[:limit]
    )
    return [
        {
            "namespace": a.pod.namespace,
            "job": a.pod.job.name if a.pod.job else None,
            "pod": a.pod.name,
            "first_seen": a.first_seen,
            "last_seen": a.last_seen,
        }
        for a in assignments
    ]
