"""Read-only time series of a run's nodes: GPU util / tensor activity and IB throughput.

Each query aggregates over the run's GPUs (or nodes) per timestamp, restricted to the intervals the
run held each node, so a node's previous or next tenant never leaks into the run's chart. Spans
longer than ``RAW_SPAN`` read the 5-minute rollups instead of raw samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection

from ingest.selectors import gpu_rows, ib_rows

from .queries import Holding

RAW_SPAN = timedelta(days=2)
ROLLUP = timedelta(minutes=5)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SeriesPoint:
    """The median and the worst (lowest) value across the run's GPUs or nodes at ``ts``."""

    ts: datetime
    median: float | None
    worst: float | None


def _floor(moment: datetime, width: timedelta) -> datetime:
    return _EPOCH + ((moment - _EPOCH) // width) * width


def _holding_values(holdings: Sequence[Holding], rollup: bool) -> tuple[str, list[object]]:
    rows = [(h.node_id, _floor(h.start, ROLLUP) if rollup else h.start, h.end) for h in holdings]
    sql = ", ".join(["(%s::int, %s::timestamptz, %s::timestamptz)"] * len(rows))
    return sql, [value for row in rows for value in row]


def _fetch(
    sql: str, params: list[object]
) -> list[tuple[datetime, float | None, float | None, float | None, float | None]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def gpu_series(
    holdings: Sequence[Holding], start: datetime, end: datetime
) -> dict[str, list[SeriesPoint]]:
    """``{"util": [...], "tensor": [...]}``: median and worst GPU of the run per timestamp."""
    if not holdings:
        return {"util": [], "tensor": []}
    rollup = end - start > RAW_SPAN
    values, params = _holding_values(holdings, rollup)
    aggregates = (
        "SELECT s.ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY s.util), min(s.util), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY s.tensor), min(s.tensor) "
    )
    if rollup:
        rows = _fetch(
            f"{aggregates}FROM ingest_gpurollup s JOIN (VALUES {values}) AS h(node_id, lo, hi) "  # noqa: S608
            "ON s.node_id = h.node_id AND s.ts >= h.lo AND s.ts <= h.hi "
            "WHERE s.ts >= %s AND s.ts <= %s GROUP BY s.ts ORDER BY s.ts",
            [*params, _floor(start, ROLLUP), end],
        )
    else:  # per holding: each node's rows through its own keys, hot and compacted
        raw = gpu_rows(*_CLIPPED, columns=("util", "tensor"))
        rows = _fetch(
            f"{aggregates}FROM (VALUES {values}) AS h(node_id, lo, hi) CROSS JOIN LATERAL ("  # noqa: S608
            f"SELECT * FROM {raw} r WHERE r.node_id = h.node_id OFFSET 0) s "
            "GROUP BY s.ts ORDER BY s.ts",
            [*params, start, end],
        )
    return {
        "util": [SeriesPoint(ts, p50, low) for ts, p50, low, _, _ in rows],
        "tensor": [SeriesPoint(ts, p50, low) for ts, _, _, p50, low in rows],
    }


#: A holding's raw window clipped to the requested one (the lateral reads' bounds).
_CLIPPED = ("greatest(h.lo, %s::timestamptz)", "least(h.hi, %s::timestamptz)")


def ib_series(holdings: Sequence[Holding], start: datetime, end: datetime) -> list[SeriesPoint]:
    """Per-node IB throughput (tx + rx over all ports, bytes/s): median and worst node per timestamp."""
    if not holdings:
        return []
    rollup = end - start > RAW_SPAN
    values, params = _holding_values(holdings, rollup)
    per_node = (
        "SELECT s.ts, s.node_id, sum(coalesce(s.tx_bytes, 0) + coalesce(s.rx_bytes, 0)) AS bw "
    )
    if rollup:
        sql = (
            f"{per_node}FROM ingest_ibrollup s JOIN (VALUES {values}) AS h(node_id, lo, hi) "
            "ON s.node_id = h.node_id AND s.ts >= h.lo AND s.ts <= h.hi "
            "WHERE s.ts >= %s AND s.ts <= %s GROUP BY s.ts, s.node_id"
        )
        params = [*params, _floor(start, ROLLUP), end]
    else:  # per holding and port: through the ports' keys, hot and compacted
        raw = ib_rows(*_CLIPPED, columns=("tx_bytes", "rx_bytes"))
        sql = (
            f"{per_node}FROM (VALUES {values}) AS h(node_id, lo, hi) "
            "JOIN ingest_ibport p ON p.node_id = h.node_id CROSS JOIN LATERAL ("
            f"SELECT * FROM {raw} r WHERE r.port_id = p.id AND r.node_id = p.node_id OFFSET 0) s "
            "GROUP BY s.ts, s.node_id"
        )
        params = [*params, start, end]
    rows = _fetch(
        "SELECT ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY bw), min(bw), NULL, NULL "  # noqa: S608
        f"FROM ({sql}) per_node GROUP BY ts ORDER BY ts",
        params,
    )
    return [SeriesPoint(ts, p50, low) for ts, p50, low, _, _ in rows]
