"""GPU family from dcgm-exporter: per-GPU gauges, NVLink bandwidth and error increases, XID events.

Dialects: ``current`` (DCGM_FI_* names, ``Hostname`` or ``hostname`` label, both
accepted through node identity) and ``legacy`` (dcgm-exporter 1.x names, ``uuid``
label). Detected from the metric names Prometheus has unless INGEST_DCGM_DIALECT
forces one. One ``query_range`` per metric, ``max by`` node labels + gpu.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection

from ..identity import node_name
from ..models import Family
from ..normalize import Collected, Column, Points, int_label, rate, row_values, steps, xid_events
from ..prometheus import PrometheusClient
from ..queries import DCGM_MARKERS, promql
from ..store import GPU_TABLE, insert_rows, timestamps, upsert_nodes
from .base import Batch, Source, StoreResult, Window

GAUGES = ("util", "tensor", "sm", "dram", "power", "temp")
NVLINK_ERRORS = ("nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery")
SPEC = tuple(Column(name, "gauge") for name in GAUGES) + tuple(
    Column(n, "increase") for n in NVLINK_ERRORS
)
FETCHED = (*GAUGES, "nvlink_bw", "nvlink_tx", "nvlink_rx", *NVLINK_ERRORS)
GpuKey = tuple[str, int]


def node_by() -> str:
    """The ``by (…)`` label list that keeps node identity (identity labels + instance)."""
    return ", ".join([*settings.INGEST_NODE_LABELS, "instance"])


def gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """(node, gpu index) of a series, or None when either is missing."""
    node, gpu = node_name(labels), int_label(labels, "gpu")
    return None if node is None or gpu is None else (node, gpu)


@dataclass
class GpuPayload:
    """Rows keyed by node name (ids are resolved in ``store``) and raw XID tracks."""

    rows: list[tuple] = field(default_factory=list)
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    xid_tracks: dict[GpuKey, list[tuple[str, Points]]] = field(default_factory=dict)
    times: list[int] = field(default_factory=list)


def nvlink_bandwidth(columns: Mapping[str, Points], ts: int, step: int) -> float | None:
    """Bytes/s over NVLink: rate of the bandwidth counter, else PROF TX + RX gauges."""
    counter = columns.get("nvlink_bw")
    if counter is not None:
        return rate(counter, ts, step)
    tx, rx = columns.get("nvlink_tx", {}).get(ts), columns.get("nvlink_rx", {}).get(ts)
    return None if tx is None and rx is None else (tx or 0.0) + (rx or 0.0)


def build_rows(collected: Collected, times: list[int], step: int, payload: GpuPayload) -> None:
    """Per (node, gpu, step) rows in ``GPU_TABLE`` column order; empty steps are not rows."""
    for (node, gpu), columns in sorted(collected.values.items()):
        for ts in times:
            values = row_values(columns, SPEC, ts, step)
            values.insert(6, nvlink_bandwidth(columns, ts, step))
            if any(v is not None for v in values):
                payload.rows.append((ts, node, gpu, *values))
                first, last = payload.seen.get(node, (ts, ts))
                payload.seen[node] = (min(first, ts), max(last, ts))


class GpuSource(Source):
    """dcgm-exporter → ``GpuSample`` rows and ``XidEvent`` rows."""

    family = Family.GPU

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """One query_range per metric over [start, end] (start = counter context)."""
        dialect = client.detect_dialect(DCGM_MARKERS, settings.INGEST_DCGM_DIALECT)
        collected, by = Collected(), node_by()
        for column in FETCHED:
            query = promql("gpu", dialect, column, by=by)
            collected.add(
                column,
                client.query_range_lenient(query, window.start, window.end, window.step),
                gpu_key,
            )
        start, end = int(window.start.timestamp()), int(window.end.timestamp())
        payload = GpuPayload(times=[start, *steps(start, end, window.step)])
        build_rows(collected, payload.times[1:], window.step, payload)
        xids = client.query_range_lenient(
            promql("gpu", dialect, "xid", by=by), window.start, window.end, window.step
        )
        skipped = collected.skipped + xids.skipped
        for series in xids.series:
            key = gpu_key(series.labels)
            if key is None:
                skipped += len(series.points)
                continue
            payload.xid_tracks.setdefault(key, []).append(
                (series.labels.get("err_msg", ""), dict(series.points))
            )
        return Batch(
            self.family, window, payload=payload, skipped=skipped, notes=[f"dialect={dialect}"]
        )

    def store(self, batch: Batch) -> StoreResult:
        """Nodes upserted, samples inserted once, new XID codes recorded as events."""
        payload: GpuPayload = batch.payload
        stamps = timestamps(payload.times)
        names = set(payload.seen) | {node for node, _gpu in payload.xid_tracks}
        seen = {n: payload.seen.get(n, (payload.times[-1], payload.times[-1])) for n in names}
        node_ids = upsert_nodes({n: (stamps[a], stamps[b]) for n, (a, b) in seen.items()})
        rows = [(stamps[r[0]], node_ids[r[1]], *r[2:]) for r in payload.rows]
        inserted = insert_rows(GPU_TABLE, rows)
        return StoreResult(rows=inserted + store_xid_events(payload, node_ids, stamps))


def _previous_codes(before: datetime) -> dict[tuple[int, int], int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT ON (node_id, gpu) node_id, gpu, code FROM ingest_xidevent "
            "WHERE ts <= %s ORDER BY node_id, gpu, ts DESC",
            [before],
        )
        return {(n, g): code for n, g, code in cursor.fetchall()}


def store_xid_events(payload: GpuPayload, node_ids: dict[str, int], stamps: dict) -> int:
    """Insert the window's new XID codes (the last stored event is the context); returns count."""
    if not payload.xid_tracks:
        return 0
    previous = _previous_codes(stamps[payload.times[0]])
    events = []
    for (node, gpu), tracks in payload.xid_tracks.items():
        node_id = node_ids[node]
        for ts, code, message in xid_events(tracks, payload.times, previous.get((node_id, gpu))):
            events.append((node_id, gpu, stamps[ts], code, message[:500]))
    if not events:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ingest_xidevent (node_id, gpu, ts, code, message) "
            "SELECT * FROM unnest(%s::bigint[], %s::int[], %s::timestamptz[], %s::int[], %s::text[]) "
            "ON CONFLICT DO NOTHING",
            [list(column) for column in zip(*events, strict=True)],
        )
        return cursor.rowcount
