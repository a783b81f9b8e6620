"""What hardware a node had at given times: the alerts' attribution reads of ingest's tables.

Probes are (node, unix seconds) pairs. GPU counts read the raw samples, hot and compacted
alike. What ran where (pods, jobs) is the runs app's: ``runs.selectors.alerting``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..history import gpu_rows
from .windows import fetch

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


class NodeFacts(NamedTuple):
    """A node's hardware and pools at time ``t``: ``pool_then`` from its pool changes (None: none yet)."""

    node: str
    t: float
    pool: str
    gpu_model: str
    leaf_switch: str
    pool_then: str | None


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
