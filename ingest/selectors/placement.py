"""What ran where and on what hardware, at given times: the alerts' attribution reads.

Probes are (node, unix seconds) pairs; pod placements count when they overlap the probe's
time ± a gap. GPU counts read the raw samples, hot and compacted alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..history import gpu_rows
from .windows import fetch

_RUNS_ON_NODES = """
WITH probe AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS p(node, t))
SELECT DISTINCT p.node, p.t, j.id, j.namespace, j.name, j.local_queue, coalesce(cq.name, '')
FROM probe p JOIN ingest_node n ON n.name = p.node
JOIN ingest_podassignment a ON a.node_id = n.id
    AND a.first_seen <= to_timestamp(p.t + %s) AND a.last_seen >= to_timestamp(p.t - %s)
JOIN ingest_pod po ON po.id = a.pod_id JOIN ingest_job j ON j.id = po.job_id
LEFT JOIN ingest_clusterqueue cq ON cq.id = j.cluster_queue_id
"""
_RUN_NODES = """
WITH probe AS (SELECT * FROM unnest(%s::bigint[], %s::float8[]) AS p(job, t))
SELECT p.job, p.t, array_agg(DISTINCT a.node_id)
FROM probe p JOIN ingest_pod po ON po.job_id = p.job JOIN ingest_podassignment a ON a.pod_id = po.id
    AND a.first_seen <= to_timestamp(p.t + %s) AND a.last_seen >= to_timestamp(p.t - %s)
GROUP BY p.job, p.t
"""
_GPU_COUNTS = f"""
SELECT node_id, count(DISTINCT gpu)
FROM {gpu_rows("to_timestamp(%s)", "to_timestamp(%s)", columns=())} s
WHERE node_id = ANY(%s) AND ts > to_timestamp(%s) AND ts <= to_timestamp(%s) GROUP BY node_id
"""
_NODES = """
SELECT n.name, p.t, n.pool, n.gpu_model, n.leaf_switch,
    (SELECT c.pool FROM ingest_poolchange c WHERE c.node_id = n.id AND c.ts <= to_timestamp(p.t)
     ORDER BY c.ts DESC LIMIT 1)
FROM unnest(%s::text[], %s::float8[]) AS p(node, t) JOIN ingest_node n ON n.name = p.node
"""


class RunOnNode(NamedTuple):
    """A run (Job) with a pod on ``node`` around time ``t``."""

    node: str
    t: float
    job_id: int
    namespace: str
    run: str
    local_queue: str
    cluster_queue: str  # "" when the run names none


class NodeFacts(NamedTuple):
    """A node's hardware and pools at time ``t``: ``pool_then`` from its pool changes (None: none yet)."""

    node: str
    t: float
    pool: str
    gpu_model: str
    leaf_switch: str
    pool_then: str | None


def runs_on_nodes(probes: Sequence[tuple[str, float]], gap: float) -> list[RunOnNode]:
    """The runs with a pod on each probe's node within ``gap`` seconds of its time."""
    if not probes:
        return []
    params = [[p[0] for p in probes], [p[1] for p in probes], gap, gap]
    return list(map(RunOnNode._make, fetch(_RUNS_ON_NODES, params)))


def run_node_ids(
    probes: Sequence[tuple[int, float]], gap: float
) -> dict[tuple[int, float], list[int]]:
    """(job id, t) → the ids of the nodes the run's pods held within ``gap`` seconds of t."""
    if not probes:
        return {}
    params = [[p[0] for p in probes], [p[1] for p in probes], gap, gap]
    return {(job, t): node_ids for job, t, node_ids in fetch(_RUN_NODES, params)}


def gpu_counts(node_ids: Sequence[int], start: float, end: float) -> dict[int, int]:
    """node id → how many GPUs reported a sample in (start, end] (nodes without one: absent)."""
    if not node_ids:
        return {}
    rows = fetch(_GPU_COUNTS, [start, end, sorted(node_ids), start, end])
    return {node_id: count for node_id, count in rows}


def node_facts(probes: Sequence[tuple[str, float]]) -> list[NodeFacts]:
    """Pool, GPU model, leaf switch and pool then of each probe's node (unknown nodes: absent)."""
    if not probes:
        return []
    params = [[p[0] for p in probes], [p[1] for p in probes]]
    return list(map(NodeFacts._make, fetch(_NODES, params)))
