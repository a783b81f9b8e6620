"""What the alert rules and attribution read about runs (times are unix seconds, as alerts use).

``alerts.inputs`` reads pod stays and running runs' checkpoints; ``alerts.attribution`` the runs
holding a node when an alert began and the nodes each of those runs held then. Node names come
through the ORM (``node__name``): the SQL here names only the runs app's own tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from django.db import connection

from ..models import PodAssignment

#: (node, pod namespace, pod, job name, first seen, last seen) of one stay of a run's pod.
Stay = tuple[str, str, str, str, float, float]
#: (node, t, job id, namespace, name, LocalQueue, ClusterQueue or "") of a run holding a node at t.
Holder = tuple[str, float, int, str, str, str, str]

# Runs running at data time: a pod of the run held a node then, and no terminal event
# (succeeded, failed) came after its last checkpoint.
_RUNNING_RUNS = """
SELECT j.namespace, j.name, true, array_agg(extract(epoch from c.ts)::float8 ORDER BY c.ts)
FROM runs_job j JOIN LATERAL (
    SELECT ts FROM runs_checkpoint WHERE job_id = j.id AND ts <= to_timestamp(%(as_of)s)
    ORDER BY ts DESC LIMIT %(history)s
) c ON true
WHERE EXISTS (
    SELECT 1 FROM runs_pod p JOIN runs_podassignment a ON a.pod_id = p.id
    WHERE p.job_id = j.id AND a.first_seen <= to_timestamp(%(as_of)s)
      AND a.last_seen >= to_timestamp(%(as_of)s - %(gap)s)
)
GROUP BY j.id
HAVING NOT EXISTS (
    SELECT 1 FROM runs_runevent e WHERE e.job_id = j.id AND e.kind IN ('succeeded', 'failed')
      AND e.ts > max(c.ts) AND e.ts <= to_timestamp(%(as_of)s)
)
"""
_RUN_NODES = """
WITH probe AS (SELECT * FROM unnest(%s::bigint[], %s::float8[]) AS p(job, t))
SELECT p.job, p.t, array_agg(DISTINCT a.node_id)
FROM probe p JOIN runs_pod po ON po.job_id = p.job JOIN runs_podassignment a ON a.pod_id = po.id
    AND a.first_seen <= to_timestamp(p.t + %s) AND a.last_seen >= to_timestamp(p.t - %s)
GROUP BY p.job, p.t
"""


def _moment(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def stays_between(start: float, end: float) -> list[Stay]:
    """Every stay of a run's pod on a node overlapping ``[start, end]``."""
    rows = PodAssignment.objects.filter(
        last_seen__gte=_moment(start), first_seen__lte=_moment(end), pod__job__isnull=False
    ).values_list(
        "node__name", "pod__namespace", "pod__name", "pod__job__name", "first_seen", "last_seen"
    )
    return [
        (node, ns, pod, job, f.timestamp(), la.timestamp()) for node, ns, pod, job, f, la in rows
    ]


def running_runs(
    as_of: float, history: int, gap: float
) -> list[tuple[str, str, bool, list[float]]]:
    """Runs running at ``as_of`` with their latest ``history`` checkpoint times, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(_RUNNING_RUNS, {"as_of": as_of, "history": history, "gap": gap})
        return cursor.fetchall()


def runs_holding(probes: Iterable[tuple[str, float]], gap: float) -> list[Holder]:
    """The runs whose pods held each probed node at its time t (± ``gap``), each pair once."""
    probes = sorted(set(probes))
    if not probes:
        return []
    times = [t for _, t in probes]
    stays = PodAssignment.objects.filter(
        node__name__in=sorted({node for node, _ in probes}),
        first_seen__lte=_moment(max(times) + gap),
        last_seen__gte=_moment(min(times) - gap),
        pod__job__isnull=False,
    ).values_list("node__name", "first_seen", "last_seen", "pod__job_id", "pod__job__namespace",
                  "pod__job__name", "pod__job__local_queue", "pod__job__cluster_queue__name")  # fmt: skip
    on_node: dict[str, list[tuple]] = defaultdict(list)
    for node, *stay in stays:
        on_node[node].append(tuple(stay))
    found = {
        (node, t, job, ns, name, queue, cluster_queue or "")
        for node, t in probes
        for first, last, job, ns, name, queue, cluster_queue in on_node[node]
        if first.timestamp() <= t + gap and last.timestamp() >= t - gap
    }
    return sorted(found)


def nodes_of_runs(
    probes: Iterable[tuple[int, float]], gap: float
) -> dict[tuple[int, float], list[int]]:
    """(job id, t) → the ids of the nodes the run held at t (± ``gap``)."""
    probes = sorted(set(probes))
    if not probes:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_RUN_NODES, [[j for j, _ in probes], [t for _, t in probes], gap, gap])
        return {(job, t): node_ids for job, t, node_ids in cursor.fetchall()}
