"""Kueue's controller metrics (every series carries replica_role="leader")."""

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
    "kueue_evicted_workloads_total", COUNTER, "The number of evicted workloads per 'cluster_queue'"
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


def _histogram(
    lines: Lines,
    family: Family,
    base: list[tuple[str, str]],
    buckets: tuple[float, ...],
    counts: list[int],
    total: float,
    count: int,
) -> None:
    for bound, value in zip(buckets, counts, strict=True):
        lines.sample(
            f"{family.name}_bucket", label_str(base + [("le", _le(bound)), ROLE]), str(value)
        )
    lines.sample(f"{family.name}_bucket", label_str(base + [("le", "+Inf"), ROLE]), str(count))
    lines.sample(f"{family.name}_sum", label_str(base + [ROLE]), num(round(total, 3)))
    lines.sample(f"{family.name}_count", label_str(base + [ROLE]), str(count))


def render(statuses: list[QueueStatus], lines: Lines) -> None:
    """Write Kueue's exposition from each ClusterQueue's status."""
    lines.family(PENDING)
    for s in statuses:
        for status, value in (("active", s.pending), ("inadmissible", 0)):
            lines.sample(
                PENDING.name,
                label_str((("cluster_queue", s.queue.cluster_queue), ("status", status), ROLE)),
                str(value),
            )
    lines.family(ADMITTED_ACTIVE)
    for s in statuses:
        lines.sample(
            ADMITTED_ACTIVE.name,
            label_str((("cluster_queue", s.queue.cluster_queue), ROLE)),
            str(s.admitted_active),
        )
    lines.family(ADMITTED_TOTAL)
    for s in statuses:
        labels = (
            ("cluster_queue", s.queue.cluster_queue),
            ("priority_class", s.queue.priority_class),
            ROLE,
        )
        lines.sample(ADMITTED_TOTAL.name, label_str(labels), str(s.admitted_total))
    lines.family(WAIT)
    for s in statuses:
        _histogram(
            lines,
            WAIT,
            [("cluster_queue", s.queue.cluster_queue)],
            WAIT_BUCKETS,
            s.wait_buckets,
            s.wait_sum,
            s.admitted_total,
        )
    lines.family(EXECUTION)
    for s in statuses:
        count = s.execution_buckets[-1] if s.execution_buckets else 0
        # Every run's execution time is below the last bucket, so +Inf equals the last count.
        _histogram(
            lines,
            EXECUTION,
            [("cluster_queue", s.queue.cluster_queue)],
            EXECUTION_BUCKETS,
            s.execution_buckets,
            s.execution_sum,
            count,
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
            ("reason", "Preempted"),
            ("underlying_cause", "InCohortReclamation"),
            ROLE,
        )
        lines.sample(EVICTED.name, label_str(labels), str(s.evicted_total))
    lines.family(PREEMPTED)
    by_preemptor = {s.queue.cluster_queue: 0 for s in statuses}
    for s in statuses:
        by_preemptor[_other(s.queue.cluster_queue)] += s.evicted_total
    for name, value in by_preemptor.items():
        labels = (("preempting_cluster_queue", name), ("reason", "InCohortReclamation"), ROLE)
        lines.sample(PREEMPTED.name, label_str(labels), str(value))


def _render_capacity(statuses: list[QueueStatus], lines: Lines) -> None:
    lines.family(STATUS)
    for s in statuses:
        for status in ("pending", "active", "terminating"):
            labels = (("cluster_queue", s.queue.cluster_queue), ("status", status), ROLE)
            lines.sample(STATUS.name, label_str(labels), "1" if status == "active" else "0")
    for family, attr in ((USAGE, "used_gpus"), (QUOTA, "nominal_gpus")):
        lines.family(family)
        for s in statuses:
            labels = (
                ("cohort", s.queue.cohort),
                ("cluster_queue", s.queue.cluster_queue),
                ("flavor", "h100-80gb"),
                ("resource", "nvidia.com/gpu"),
                ROLE,
            )
            lines.sample(family.name, label_str(labels), big(getattr(s, attr)))
