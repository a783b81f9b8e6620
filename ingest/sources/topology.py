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


def uplinks_from(uplink_series: list, switch_names: dict[str, str]) -> tuple[list[Uplink], int]:
    """Decode uplink info series into ``Uplink``s; returns them and the count skipped."""
    uplinks, skipped = [], 0
    for series in uplink_series:
        labels = series.labels
        located = split_hca(labels.get("uplink", ""))
        port = int_label(labels, "uplink_port")
        if labels.get("uplink_type", "CA") != "CA" or located is None or port is None:
            skipped += 1
            continue
        leaf = switch_names.get(labels.get("guid", ""), "") or labels.get("switch", "")
        uplinks.append(
            Uplink(*located, port, labels.get("uplink_guid", ""), leaf, labels.get("port", ""))
        )
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
        uplinks, skipped = uplinks_from(answer.series, names)
        return Batch(
            self.family,
            window,
            payload=uplinks,
            skipped=skipped + answer.skipped + switches.skipped,
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
