"""Topology family: which leaf switch port each node's HCA port hangs off.

From treydock's ``infiniband_switch_uplink_info`` (one series per switch port
with a CA on the far end: ``uplink`` "gpu-017 HCA-1", ``uplink_guid``,
``uplink_port``) named through ``infiniband_switch_info``. Sets
``IbPort.leaf_switch``/``switch_port`` and ``Node.leaf_switch`` (its ports' most
common leaf). Without those series the family stores nothing: topology is optional.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import connection

from ..identity import NodeResolver, optional, resolver_for
from ..models import Family
from ..normalize import int_label, split_hca
from ..prometheus import PrometheusClient
from ..queries import promql
from ..store import json_rows, upsert_nodes, upsert_ports
from .base import Batch, Source, StoreResult, Window


@dataclass(frozen=True)
class Uplink:
    """One node port's place in the fabric."""

    node: str
    device: str
    port: int
    guid: str
    leaf_switch: str
    switch_port: str


def uplinks_from(
    uplink_series: list, switch_names: dict[str, str], names: NodeResolver | None = None
) -> tuple[list[Uplink], int]:
    """Decode uplink info series into ``Uplink``s; returns them and the count skipped.

    The node and device go through ``ingest.identity`` (``names``) like every family's.
    """
    uplinks, skipped, names = [], 0, names or NodeResolver()
    for series in uplink_series:
        labels = series.labels
        port = int_label(labels, "uplink_port")
        located = None
        if labels.get("uplink_type", "CA") == "CA":
            hca = split_hca(labels.get("uplink", ""))
            located = names.located(hca, labels.get("uplink_guid", ""), labels)
        leaf = optional(switch_names.get(labels.get("guid", ""), "") or labels.get("switch", ""))
        switch_port = optional(labels.get("port", ""), 32)
        if located is None or port is None or leaf is None or switch_port is None:
            skipped += 1
            continue
        uplinks.append(Uplink(*located, port, labels.get("uplink_guid", ""), leaf, switch_port))
    return uplinks, skipped


class TopologySource(Source):
    """infiniband_switch_uplink_info → IbPort.leaf_switch / switch_port, Node.leaf_switch."""

    family = Family.TOPOLOGY

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Two instant queries at the window end, looking back over the window."""
        span = f"{int((window.end - window.start).total_seconds()) + 300}s"
        switches = client.query(
            promql("topology", "treydock", "switches", range=span), at=window.end
        )
        names = {s.labels.get("guid", ""): s.labels.get("switch", "") for s in switches.series}
        answer = client.query(promql("topology", "treydock", "uplinks", range=span), at=window.end)
        resolver = resolver_for(client, window.start, window.end)
        uplinks, skipped = uplinks_from(answer.series, names, resolver)
        return Batch(
            self.family,
            window,
            payload=uplinks,
            skipped=skipped + answer.skipped + switches.skipped,
            unfit=resolver.unfit(),
        )

    def store(self, batch: Batch) -> StoreResult:
        """Upsert nodes/ports and set where they plug in; returns ports updated."""
        uplinks: list[Uplink] = batch.payload
        if not uplinks:
            return StoreResult()
        when = batch.window.end
        node_ids = upsert_nodes({u.node: (when, when) for u in uplinks})
        port_ids = upsert_ports((node_ids[u.node], u.device, u.port, u.guid) for u in uplinks)
        by_port = {port_ids[(node_ids[u.node], u.device, u.port)]: u for u in uplinks}
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE ingest_ibport p SET leaf_switch = t.leaf, switch_port = t.sp "
                "FROM (SELECT (r->>0)::bigint AS id, r->>1 AS leaf, r->>2 AS sp "
                "FROM json_array_elements(%s::json) AS r) AS t "
                "WHERE p.id = t.id AND (p.leaf_switch, p.switch_port) IS DISTINCT FROM (t.leaf, t.sp)",
                [json_rows((pk, u.leaf_switch, u.switch_port) for pk, u in by_port.items())],
            )
            changed = cursor.rowcount
            leaves = _most_common_leaf(uplinks, node_ids)
            cursor.execute(
                "UPDATE ingest_node n SET leaf_switch = t.leaf "
                "FROM (SELECT (r->>0)::bigint AS id, r->>1 AS leaf "
                "FROM json_array_elements(%s::json) AS r) AS t "
                "WHERE n.id = t.id AND n.leaf_switch IS DISTINCT FROM t.leaf",
                [json_rows(leaves.items())],
            )
            changed += cursor.rowcount
        return StoreResult(rows=changed)


def _most_common_leaf(uplinks: list[Uplink], node_ids: dict[str, int]) -> dict[int, str]:
    counts: dict[int, Counter[str]] = {}
    for uplink in uplinks:
        counts.setdefault(node_ids[uplink.node], Counter())[uplink.leaf_switch] += 1
    return {node_id: counter.most_common(1)[0][0] for node_id, counter in counts.items()}
