"""Topology family: which leaf switch port each node's HCA port hangs off.

From treydock's ``infiniband_switch_uplink_info`` (one series per switch port
with a CA on the far end: ``uplink`` "gpu-017 HCA-1", ``uplink_guid``,
``uplink_port``) and, when its HCA collector runs, ``infiniband_hca_uplink_info``
(the HCA side: ``hca``, ``port``, ``uplink`` = the switch, ``uplink_port``),
switches named through ``infiniband_switch_info``. CA names go through
``normalize.split_hca``: a non-host CA (SHARP aggregation node) is skipped and
counted per reason in the notes. Sets ``IbPort.leaf_switch``/``switch_port``
and ``Node.leaf_switch`` (its ports' most common leaf). Without those series
the family stores nothing: topology is optional.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

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


@dataclass
class Decoded:
    """Uplinks by port, malformed series skipped, non-host CAs skipped per reason (by GUID)."""

    uplinks: dict[tuple[str, str, int], Uplink] = field(default_factory=dict)
    skipped: int = 0
    skipped_cas: dict[str, set[str]] = field(default_factory=dict)
    # Node and device go through ``ingest.identity`` like every family's.
    names: NodeResolver = field(default_factory=NodeResolver)

    def add(self, ca: str, guid: str, port: int | None, leaf: str, switch_port: str,
            labels: Mapping[str, str]) -> None:  # fmt: skip
        """One CA port and its switch port (a CA that is not a host port is counted, not kept)."""
        name = split_hca(ca)
        if name.skip:
            self.skipped_cas.setdefault(name.skip, set()).add(guid)
            return
        located = self.names.located((name.node, name.device), guid, labels)
        leaf_name, port_name = optional(leaf), optional(switch_port, 32)
        if located is None or port is None or leaf_name is None or port_name is None:
            self.skipped += 1
        else:
            key = (*located, port)
            self.uplinks.setdefault(key, Uplink(*key, guid, leaf_name, port_name))

    def notes(self) -> list[str]:
        """``skipped CAs <reason>=<count>`` per reason."""
        return [f"skipped CAs {r}={len(g)}" for r, g in sorted(self.skipped_cas.items())]


def uplinks_from(uplink_series: list, switch_names: dict[str, str], into: Decoded) -> None:
    """Switch side: ``infiniband_switch_uplink_info`` series whose far end is a CA."""
    for series in uplink_series:
        labels = series.labels
        if labels.get("uplink_type", "CA") != "CA":
            continue  # switch-to-switch links are not node ports
        leaf = switch_names.get(labels.get("guid", ""), "") or labels.get("switch", "")
        into.add(
            labels.get("uplink", ""),
            labels.get("uplink_guid", ""),
            int_label(labels, "uplink_port"),
            leaf,
            labels.get("port", ""),
            labels,
        )


def hca_uplinks_from(uplink_series: list, switch_names: dict[str, str], into: Decoded) -> None:
    """HCA side: ``infiniband_hca_uplink_info`` series whose far end is a switch."""
    for series in uplink_series:
        labels = series.labels
        if labels.get("uplink_type", "SW") != "SW":
            continue  # a back-to-back CA link has no leaf switch
        leaf = switch_names.get(labels.get("uplink_guid", ""), "") or labels.get("uplink", "")
        into.add(
            labels.get("hca", ""),
            labels.get("guid", ""),
            int_label(labels, "port"),
            leaf,
            labels.get("uplink_port", ""),
            labels,
        )


class TopologySource(Source):
    """Switch and HCA uplink info → IbPort.leaf_switch / switch_port, Node.leaf_switch."""

    family = Family.TOPOLOGY

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Three instant queries at the window end (switches, switch side, HCA side), looking
        back over the window."""
        span = f"{int((window.end - window.start).total_seconds()) + 300}s"
        switches = client.query(
            promql("topology", "treydock", "switches", range=span), at=window.end
        )
        names = {s.labels.get("guid", ""): s.labels.get("switch", "") for s in switches.series}
        resolver = resolver_for(client, window.start, window.end)
        decoded = Decoded(skipped=switches.skipped, names=resolver)
        for name, decode in (("uplinks", uplinks_from), ("hca_uplinks", hca_uplinks_from)):
            answer = client.query(promql("topology", "treydock", name, range=span), at=window.end)
            decode(answer.series, names, decoded)
            decoded.skipped += answer.skipped
        return Batch(
            self.family,
            window,
            payload=sorted(decoded.uplinks.values(), key=lambda u: (u.node, u.device, u.port)),
            skipped=decoded.skipped,
            notes=decoded.notes(),
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
