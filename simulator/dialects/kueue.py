"""Kueue's controller metrics (every series carries replica_role="leader").

Names, label sets and buckets: kubernetes-sigs/kueue pkg/metrics/metrics.go at v0.19.2
(8eab68778fc1b52affe165fdf5af29d1e9b4f3cb); execution_time_seconds only exists after it
(ff69552e79ad). client_golang writes label names sorted, ``le`` last.
"""

from __future__ import annotations

from simulator.exposition import COUNTER, GAUGE, HISTOGRAM, Family, Lines, big, label_str, num
from simulator.queues import EXECUTION_BUCKETS, WAIT_BUCKETS, QueueStatus
from simulator.topology import QUEUES

PENDING = Family(
    "kueue_pending_workloads",
    GAUGE,
    "The number of pending workloads, per 'cluster_queue' and 'status'.",
)
ADMITTED_ACTIVE = Family(
    "kueue_admitted_active_workloads",
    GAUGE,
    "The number of admitted Workloads that are active (unsuspended and not finished), per 'cluster_queue'",
)
ADMITTED_TOTAL = Family(
    "kueue_admitted_workloads_total",
    COUNTER,
    "The total number of admitted workloads per 'cluster_queue'",
)
WAIT = Family(
    "kueue_admission_wait_time_seconds",
    HISTOGRAM,
    "The time between a workload was created or requeued until admission, per 'cluster_queue'",
)
EXECUTION = Family(
    "kueue_execution_time_seconds",
    HISTOGRAM,
    "The time between a workload was admitted and finished, per 'cluster_queue'",
)
EVICTED = Family(
    "kueue_evicted_workloads_total", COUNTER, "The number of evicted workloads per 'cluster_queue',"
)
PREEMPTED = Family(
    "kueue_preempted_workloads_total",
    COUNTER,
    "The number of preempted workloads per 'preempting_cluster_queue'",
)
STATUS = Family(
    "kueue_cluster_queue_status",
    GAUGE,
    "Reports 'cluster_queue' with its 'status' (with possible values 'pending', 'active' or 'terminated').",
)
USAGE = Family(
    "kueue_cluster_queue_resource_usage", GAUGE, "Reports the cluster_queue's total resource usage"
)
QUOTA = Family(
    "kueue_cluster_queue_nominal_quota", GAUGE, "Reports the cluster_queue's resource nominal quota"
)
FAMILIES = [
    PENDING,
    ADMITTED_ACTIVE,
    ADMITTED_TOTAL,
    WAIT,
    EXECUTION,
    EVICTED,
    PREEMPTED,
    STATUS,
    USAGE,
    QUOTA,
]
ROLE = ("replica_role", "leader")


def _le(bound: float) -> str:
    return num(bound)


def _labels(pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    """client_golang order: label names sorted (``replica_role`` included)."""
    return label_str(sorted({*pairs, ROLE}))


def _histogram(
    lines: Lines,
    family: Family,
    base: list[tuple[str, str]],
    buckets: tuple[float, ...],
    counts: list[int],
    total: float,
    count: int,
) -> None:
    head = _labels(base)
    for bound, value in zip(buckets, counts, strict=True):
        lines.sample(f"{family.name}_bucket", f'{head},le="{_le(bound)}"', str(value))
    lines.sample(f"{family.name}_bucket", f'{head},le="+Inf"', str(count))
    lines.sample(f"{family.name}_sum", head, num(round(total, 3)))
    lines.sample(f"{family.name}_count", head, str(count))


def render(statuses: list[QueueStatus], lines: Lines) -> None:
    """Write Kueue's exposition from each ClusterQueue's status."""
    lines.family(PENDING)
    for s in statuses:
        for status, value in (("active", s.pending), ("inadmissible", 0)):
            lines.sample(
                PENDING.name,
                _labels((("cluster_queue", s.queue.cluster_queue), ("status", status))),
                str(value),
            )
    lines.family(ADMITTED_ACTIVE)
    for s in statuses:
        lines.sample(
            ADMITTED_ACTIVE.name,
            _labels((("cluster_queue", s.queue.cluster_queue),)),
            str(s.admitted_active),
        )
    lines.family(ADMITTED_TOTAL)
    for s in statuses:
        labels = (
            ("cluster_queue", s.queue.cluster_queue),
            ("priority_class", s.queue.priority_class),
        )
        lines.sample(ADMITTED_TOTAL.name, _labels(labels), str(s.admitted_total))
    lines.family(WAIT)
    for s in statuses:
        _histogram(
            lines,
            WAIT,
            [("cluster_queue", s.queue.cluster_queue), ("priority_class", s.queue.priority_class)],
            WAIT_BUCKETS,
            s.wait_buckets,
            s.wait_sum,
            s.admitted_total,
        )
    lines.family(EXECUTION)
    for s in statuses:
        _histogram(
            lines,
            EXECUTION,
            [("cluster_queue", s.queue.cluster_queue), ("priority_class", s.queue.priority_class)],
            EXECUTION_BUCKETS,
            s.execution_buckets,
            s.execution_sum,
            s.execution_count,
        )
    _render_evictions(statuses, lines)
    _render_capacity(statuses, lines)


def _other(queue_name: str) -> str:
    names = [q.cluster_queue for q in QUEUES]
    return names[(names.index(queue_name) + 1) % len(names)]


def _render_evictions(statuses: list[QueueStatus], lines: Lines) -> None:
    lines.family(EVICTED)
    for s in statuses:
        labels = (
            ("cluster_queue", s.queue.cluster_queue),
            ("priority_class", s.queue.priority_class),
            ("reason", "Preempted"),
            ("underlying_cause", ""),  # "": the reason is the root cause
        )
        lines.sample(EVICTED.name, _labels(labels), str(s.evicted_total))
    lines.family(PREEMPTED)
    by_preemptor = {s.queue.cluster_queue: 0 for s in statuses}
    for s in statuses:
        by_preemptor[_other(s.queue.cluster_queue)] += s.evicted_total
    for name, value in by_preemptor.items():
        labels = (("preempting_cluster_queue", name), ("reason", "InCohortReclamation"))
        lines.sample(PREEMPTED.name, _labels(labels), str(value))


def _render_capacity(statuses: list[QueueStatus], lines: Lines) -> None:
    lines.family(STATUS)
    for s in statuses:
        for status in ("pending", "active", "terminating"):
            labels = (("cluster_queue", s.queue.cluster_queue), ("status", status))
            lines.sample(STATUS.name, _labels(labels), "1" if status == "active" else "0")
    for family, attr in ((USAGE, "used_gpus"), (QUOTA, "nominal_gpus")):
        lines.family(family)
        for s in statuses:
            labels = (
                ("cohort", s.queue.cohort),
                ("cluster_queue", s.queue.cluster_queue),
                ("flavor", "h100-80gb"),
                ("resource", "nvidia.com/gpu"),
            )
            lines.sample(family.name, _labels(labels), big(getattr(s, attr)))
