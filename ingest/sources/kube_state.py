"""Cluster membership from kube-state-metrics: nodes, their pool (from taints), cordons.

A node's pool comes from its taints through ``INGEST_POOL_TAINTS``: an ordered
mapping of ``"key"`` or ``"key=value"`` to a pool name, where an empty pool means
"the taint's value names the pool". The first rule that yields a known pool wins;
a node no rule matches gets ``INGEST_POOL_DEFAULT``. Node names are untrusted
label values and are stored as they are (templates escape them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from .. import queries
from ..dimensions import insert_new
from ..models import Family, Pool
from ..prometheus import PrometheusClient, Series
from ..stepseries import changes, to_datetime
from ..store import json_rows, upsert_nodes
from .base import Batch, Source, StoreResult, Window
from .rangefetch import fetch, labelled, promql

#: The simulator and many clusters use ``node-pool=<pool>``; the others are common variants.
DEFAULT_POOL_TAINTS: dict[str, str] = {
    "node-pool": "",
    "pool": "",
    "nvidia.com/gpu-pool": "",
    "dedicated=training": Pool.TRAINING,
    "dedicated=inference": Pool.INFERENCE,
}


_POOLS = frozenset(Pool.values)


def pool_of(taints: Iterable[tuple[str, str]], rules: Mapping[str, str], default: str) -> str:
    """The pool a node's (key, value) taints put it in."""
    present = sorted(set(taints))
    for selector, pool in rules.items():
        key, has_value, value = selector.partition("=")
        for taint_key, taint_value in present:
            if taint_key != key or (has_value and taint_value != value):
                continue
            chosen = (pool or taint_value).strip().lower()
            if chosen in _POOLS:
                return chosen
    return default


@dataclass
class NodeObservation:
    """One node over a window: when seen, pool changes (first point included), cordon state."""

    first: float
    last: float
    pools: list[tuple[float, str]] = field(default_factory=list)
    unschedulable: bool | None = None


class ClusterSource(Source):
    """Nodes, pools and PoolChange rows from kube_node_* series."""

    family = Family.CLUSTER

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch node presence, taints and cordons over the window and normalise them."""
        batch = Batch(self.family, window, {})

        def query(name: str) -> list[tuple[tuple[str, ...], Series]]:
            found = fetch(client, promql(self.family, queries.CLUSTER, name), window, batch)
            return labelled(found, "node", batch=batch)

        presence: dict[str, set[float]] = {}
        for (node,), series in query("node_info"):
            presence.setdefault(node, set()).update(ts for ts, _ in series.points)
        taints = _fresh_taints(query("taints"))
        for node, ts in taints:
            presence.setdefault(node, set()).add(ts)
        cordons: dict[str, tuple[float, float]] = {}
        for (node,), series in query("unschedulable"):
            presence.setdefault(node, set()).update(ts for ts, _ in series.points)
            cordons[node] = series.points[-1]
        batch.payload = _observations(presence, taints, cordons)
        return batch

    def store(self, batch: Batch) -> StoreResult:
        """Upsert nodes, write pool changes once, and refresh pool / cordon from the newest data."""
        observed: dict[str, NodeObservation] = batch.payload
        ids = upsert_nodes(
            {n: (to_datetime(o.first), to_datetime(o.last)) for n, o in observed.items()}
        )
        previous = _pool_before({ids[n]: o.pools[0][0] for n, o in observed.items() if o.pools})
        rows = []
        for name, obs in observed.items():
            node_id = ids[name]
            for i, (ts, pool) in enumerate(obs.pools):
                if i == 0 and previous.get(node_id) == pool:
                    continue
                rows.append((node_id, to_datetime(ts), pool))
        written = insert_new("ingest_poolchange", ("node_id", "ts", "pool"), rows)
        _refresh_nodes(ids, observed)
        return StoreResult(rows=written)


def _fresh_taints(
    found: list[tuple[tuple[str, ...], Series]],
) -> dict[tuple[str, float], set[tuple[str, str]]]:
    """(node, step) → taints whose sample is from the node's newest scrape at that step."""
    stamped: dict[tuple[str, float], list[tuple[float, tuple[str, str]]]] = {}
    for (node,), series in found:
        pair = (series.labels.get("key", ""), series.labels.get("value", ""))
        for ts, sampled_at in series.points:
            stamped.setdefault((node, ts), []).append((sampled_at, pair))
    fresh = {}
    for key, items in stamped.items():
        newest = max(sampled_at for sampled_at, _ in items)
        fresh[key] = {pair for sampled_at, pair in items if sampled_at >= newest - 1.0}
    return fresh


def _observations(
    presence: Mapping[str, set[float]],
    taints: Mapping[tuple[str, float], set[tuple[str, str]]],
    cordons: Mapping[str, tuple[float, float]],
) -> dict[str, NodeObservation]:
    rules = getattr(settings, "INGEST_POOL_TAINTS", None) or DEFAULT_POOL_TAINTS
    default = getattr(settings, "INGEST_POOL_DEFAULT", Pool.UNKNOWN)
    observed = {}
    for node, stamps in presence.items():
        ordered = sorted(stamps)
        pools = [(ts, pool_of(taints.get((node, ts), ()), rules, default)) for ts in ordered]
        cordon = cordons.get(node)
        observed[node] = NodeObservation(
            first=ordered[0],
            last=ordered[-1],
            pools=changes(pools),
            unschedulable=None if cordon is None or cordon[0] < ordered[-1] else cordon[1] > 0,
        )
    return observed


def _pool_before(first_points: Mapping[int, float]) -> dict[int, str]:
    """Each node's pool as recorded at or before the given unix time."""
    if not first_points:
        return {}
    ids = list(first_points)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT ON (pc.node_id) pc.node_id, pc.pool FROM ingest_poolchange pc "
            "JOIN unnest(%s::bigint[], %s::timestamptz[]) AS k(n, t) "
            "ON pc.node_id = k.n AND pc.ts <= k.t ORDER BY pc.node_id, pc.ts DESC",
            [ids, [to_datetime(first_points[i]) for i in ids]],
        )
        return dict(cursor.fetchall())


def _refresh_nodes(ids: Mapping[str, int], observed: Mapping[str, NodeObservation]) -> None:
    """Node.pool = its newest PoolChange; Node.unschedulable from the newest window only."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ingest_node n SET pool = latest.pool FROM (SELECT DISTINCT ON (node_id) "
            "node_id, pool FROM ingest_poolchange WHERE node_id = ANY(%s) ORDER BY node_id, ts DESC) "
            "AS latest WHERE n.id = latest.node_id AND n.pool <> latest.pool",
            [sorted(ids.values())],
        )
        cordons = [
            (ids[name], obs.unschedulable, to_datetime(obs.last))
            for name, obs in sorted(observed.items())
            if obs.unschedulable is not None
        ]
        if cordons:
            # Only where the node's newest data is this window's (an older window never undoes).
            cursor.execute(
                "UPDATE ingest_node n SET unschedulable = t.u FROM (SELECT (r->>0)::bigint AS id, "
                "(r->>1)::boolean AS u, (r->>2)::timestamptz AS last "
                "FROM json_array_elements(%s::json) AS r) AS t "
                "WHERE n.id = t.id AND n.last_seen <= t.last AND n.unschedulable <> t.u",
                [json_rows(cordons)],
            )
