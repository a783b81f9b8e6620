"""Raw samples, XID events and ingest health as plain rows (alerts' backtests, the dashboard)."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from ..health import current_lags
from ..history import gpu_rows, ib_rows
from ..models import FamilyHealth, XidEvent
from ..store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS
from .windows import fetch


class GpuRow(NamedTuple):
    """One raw GPU sample for the alert rules."""

    node: str
    gpu: int
    ts: datetime
    util: float | None
    tensor: float | None
    sm: float | None
    dram: float | None
    power: float | None
    temp: float | None
    nvlink_bw: float | None
    nvlink_crc_flit: float | None
    nvlink_crc_data: float | None
    nvlink_replay: float | None
    nvlink_recovery: float | None


class IbRow(NamedTuple):
    """One raw IB port sample for the alert rules (column meanings as ``IbSample``)."""

    node: str
    device: str
    port: int
    ts: datetime
    tx_bytes: float | None
    rx_bytes: float | None
    tx_packets: float | None
    rx_packets: float | None
    xmit_wait: float | None
    symbol_errors: float | None
    link_downed: float | None
    link_error_recovery: float | None
    rcv_errors: float | None
    local_link_integrity: float | None
    excessive_buffer_overrun: float | None
    rate: float | None
    state: int | None
    phys_state: int | None
    saturated: int


class XidRow(NamedTuple):
    """One XID event."""

    node: str
    gpu: int
    ts: datetime
    code: int
    message: str


def xid_events(node: str | None, start: datetime, end: datetime) -> list[XidRow]:
    """XID events in [start, end) of one node (or all nodes when None), oldest first."""
    events = XidEvent.objects.filter(ts__gte=start, ts__lt=end).order_by("ts", "node__name", "gpu")
    if node is not None:
        events = events.filter(node__name=node)
    return [
        XidRow(*row) for row in events.values_list("node__name", "gpu", "ts", "code", "message")
    ]


class FamilyHealthRow(NamedTuple):
    """Ingest health of one family, lag computed now (None before its first cycle)."""

    family: str
    last_attempt: datetime | None
    last_success: datetime | None
    lag_seconds: float | None
    duration_seconds: float | None
    rows: int
    skipped: int
    errors: int
    last_rows: int
    last_error: str


def family_health() -> list[FamilyHealthRow]:
    """Every family that has health recorded, ordered by family."""
    lags = current_lags()
    return [
        FamilyHealthRow(
            h.family,
            h.last_attempt,
            h.last_success,
            lags.get(h.family),
            h.duration_seconds,
            h.rows,
            h.skipped,
            h.errors,
            h.last_rows,
            h.last_error,
        )
        for h in FamilyHealth.objects.order_by("family")
    ]


def _node_filter(nodes: list[str] | None) -> tuple[str, list]:
    return ("AND n.name = ANY(%s)", [list(nodes)]) if nodes else ("", [])


def gpu_samples_between(
    start: datetime, end: datetime, nodes: list[str] | None = None
) -> list[GpuRow]:
    """Raw GPU samples with start < ts <= end, ordered by node, gpu, ts."""
    where, extra = _node_filter(nodes)
    rows = fetch(
        f"SELECT n.name, s.gpu, s.ts, {', '.join('s.' + c for c in GPU_VALUE_COLUMNS)} "
        f"FROM {gpu_rows('%s', '%s')} s JOIN ingest_node n ON n.id = s.node_id "
        f"WHERE s.ts > %s AND s.ts <= %s {where} ORDER BY 1, 2, 3",
        [start, end, start, end, *extra],
    )
    return [GpuRow._make(row) for row in rows]


def ib_samples_between(
    start: datetime, end: datetime, nodes: list[str] | None = None
) -> list[IbRow]:
    """Raw IB port samples with start < ts <= end, ordered by node, device, port, ts."""
    where, extra = _node_filter(nodes)
    rows = fetch(
        f"SELECT n.name, p.device, p.port, s.ts, {', '.join('s.' + c for c in IB_VALUE_COLUMNS)} "
        f"FROM {ib_rows('%s', '%s')} s JOIN ingest_ibport p ON p.id = s.port_id "
        f"JOIN ingest_node n ON n.id = s.node_id WHERE s.ts > %s AND s.ts <= %s {where} ORDER BY 1, 2, 3, 4",
        [start, end, start, end, *extra],
    )
    return [IbRow._make(row) for row in rows]
