"""InfiniBand family: per node port throughput, wait, error increases, state and rate.

Dialects: ``node_exporter`` (node = the target's host through node identity;
``device``/``port`` labels) and ``treydock`` (one exporter for the fabric; a
port's ``guid`` maps to its node and device through ``infiniband_hca_info``'s
``hca`` label, e.g. "gpu-017 HCA-1" → gpu-017 / mlx5_0). Auto-detected,
node_exporter preferred when both exist; INGEST_IB_DIALECT forces one. Rates
and increases come from consecutive raw counter values; a 32-bit counter pegged
at 4294967295 sets its bit in ``saturated`` and its value is NULL, never 0.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings

from ..identity import NodeResolver, node_name, resolver_for
from ..models import Family
from ..normalize import (
    Collected,
    Column,
    column_at,
    int_label,
    saturation_masks,
    split_hca,
    steps,
)
from ..prometheus import PrometheusClient
from ..queries import IB_MARKERS, promql
from ..store import IB_TABLE, insert_rows, timestamps, upsert_nodes, upsert_ports
from .base import Batch, Source, StoreResult, Window
from .dcgm import node_by

#: Stored columns in ``IB_TABLE`` order (before ``saturated``), with their saturation bit.
SPEC = (
    Column("tx_bytes", "rate", 1 << 0),
    Column("rx_bytes", "rate", 1 << 1),
    Column("tx_packets", "rate", 1 << 2),
    Column("rx_packets", "rate", 1 << 3),
    Column("xmit_wait", "rate", 1 << 4),
    Column("symbol_errors", "increase", 1 << 5),
    Column("link_downed", "increase", 1 << 6),
    Column("link_error_recovery", "increase", 1 << 7),
    Column("rcv_errors", "increase", 1 << 8),
    Column("local_link_integrity", "increase", 1 << 9),
    Column("excessive_buffer_overrun", "increase", 1 << 10),
    Column("rate", "gauge"),
    Column("state", "gauge"),
    Column("phys_state", "gauge"),
)
SATURATION_BITS = {column.name: column.saturation_bit for column in SPEC if column.saturation_bit}
PortKey = tuple[str, str, int, str]  # node, device, port, guid


@dataclass
class IbPayload:
    """Rows keyed by (node, device, port, guid); ids are resolved in ``store``."""

    rows: list[tuple] = field(default_factory=list)
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    times: list[int] = field(default_factory=list)


def node_exporter_key(
    labels: Mapping[str, str], names: NodeResolver | None = None
) -> PortKey | None:
    """(node, device, port, "") of a node_exporter series (node, device: ``ingest.identity``)."""
    names = names or NodeResolver()
    node, port = node_name(labels, names), int_label(labels, "port")
    device = names.device(labels.get("device"), labels) if node is not None else None
    return None if node is None or port is None or not device else (node, device, port, "")


def treydock_keyer(
    hca_by_guid: Mapping[str, str], names: NodeResolver | None = None
) -> Callable[[Mapping[str, str]], Hashable | None]:
    """A key function mapping treydock's (guid, port) to (node, device, port, guid)."""
    names = names or NodeResolver()

    def key(labels: Mapping[str, str]) -> PortKey | None:
        guid, port = labels.get("guid", ""), int_label(labels, "port")
        located = names.located(split_hca(hca_by_guid.get(guid, "")), guid, labels)
        return None if located is None or port is None else (*located, port, guid)

    return key


def build_rows(collected: Collected, times: list[int], step: int, payload: IbPayload) -> None:
    """Per (port, step) rows: values in SPEC order, then the saturation mask."""
    keys = collected.keys()
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for ts in times:
        columns = [column_at(collected, column, keys, ts, step) for column in SPEC]
        for index in (12, 13):  # state / phys_state are smallint columns
            columns[index] = [None if v is None else int(v) for v in columns[index]]
        masks = saturation_masks(collected, SPEC, ts)
        rows = [
            (ts, key, *values, masks.get(key, 0))
            for key, values in zip(keys, zip(*columns, strict=True), strict=True)
            if key in masks or values.count(None) < len(SPEC)
        ]
        payload.rows += rows
        for node in {row[1][0] for row in rows}:
            first.setdefault(node, ts)
            last[node] = ts
    payload.seen = {node: (ts, last[node]) for node, ts in first.items()}


class IbSource(Source):
    """IB exporter → ``IbPort`` and ``IbSample`` rows."""

    family = Family.IB

    def _key_function(
        self, client: PrometheusClient, dialect: str, window: Window, names: NodeResolver
    ) -> Callable:
        if dialect == "node_exporter":
            return partial(node_exporter_key, names=names)
        span = int((window.end - window.start).total_seconds()) + 300
        info = client.query(promql("ib", dialect, "hca_info", range=f"{span}s"), at=window.end)
        return treydock_keyer(
            {s.labels.get("guid", ""): s.labels.get("hca", "") for s in info.series}, names
        )

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """One query_range per counter/gauge over the window's steps (counters: from its start)."""
        dialect = client.detect_dialect(IB_MARKERS, settings.INGEST_IB_DIALECT)
        names = resolver_for(client, window.start, window.end)
        key_of, collected, by = (
            self._key_function(client, dialect, window, names),
            Collected(),
            node_by(),
        )
        queries = [
            (promql("ib", dialect, column.name, by=by), window.fetch_start(column.kind))
            for column in SPEC
        ]
        answers = client.query_ranges(queries, window.end, window.step)
        collected.add_answers([column.name for column in SPEC], answers, key_of)
        start, end = int(window.start.timestamp()), int(window.end.timestamp())
        payload = IbPayload(times=[start, *steps(start, end, window.step)])
        build_rows(collected, payload.times[1:], window.step, payload)
        return Batch(
            self.family,
            window,
            payload=payload,
            skipped=collected.skipped,
            notes=[f"dialect={dialect}"],
            unfit=names.unfit(),
        )

    def store(self, batch: Batch) -> StoreResult:
        """Nodes and ports upserted, samples inserted once."""
        payload: IbPayload = batch.payload
        stamps = timestamps(payload.times)
        node_ids = upsert_nodes({n: (stamps[a], stamps[b]) for n, (a, b) in payload.seen.items()})
        keys = {row[1] for row in payload.rows}
        port_ids = upsert_ports((node_ids[n], d, p, g) for n, d, p, g in keys)
        rows = [
            (
                stamps[r[0]],
                port_ids[(node_ids[r[1][0]], r[1][1], r[1][2])],
                node_ids[r[1][0]],
                *r[2:],
            )
            for r in payload.rows
        ]
        return StoreResult(rows=insert_rows(IB_TABLE, rows))
