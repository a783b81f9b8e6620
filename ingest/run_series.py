"""What the runs app reads from ingest's tables: its nodes' GPU and IB series, its queues' Kueue history.

``runs.selectors`` calls these with plain ids and times; the SQL on ingest's tables (raw samples,
compacted history through ``ingest_gpu_rows``/``ingest_ib_rows``, the 5-minute rollups, Kueue
samples) stays in ingest, which owns them. A run's node series are restricted to the spans the run
held each node, so a node's previous or next tenant never leaks into the run's chart; spans longer
than ``RAW_SPAN`` read the 5-minute rollups instead of raw samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Sum

from .history import gpu_rows, ib_rows
from .models import ClusterQueue, KueueEviction, KueueQuota
from .selectors.windows import fetch

RAW_SPAN = timedelta(days=2)
ROLLUP = timedelta(minutes=5)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: (node id, start, end): a run held the node over [start, end].
NodeSpan = tuple[int, datetime, datetime]
#: (key, node id, lo, hi): a window of one node whose median GPU util is wanted, under ``key``.
UtilWindow = tuple[int, int, datetime, datetime]
#: A holding's raw window clipped to the requested one (the lateral reads' bounds).
_CLIPPED = ("greatest(h.lo, %s::timestamptz)", "least(h.hi, %s::timestamptz)")


@dataclass(frozen=True)
class SeriesPoint:
    """The median and the worst (lowest) value across the run's GPUs or nodes at ``ts``."""

    ts: datetime
    median: float | None
    worst: float | None


def gpus_per_node(node_ids: Sequence[int], start: datetime, end: datetime) -> dict[int, int]:
    """Distinct GPUs each node reported in (at most the last day of) ``[start, end]``."""
    if not node_ids:
        return {}
    lo = max(start, end - timedelta(days=1))
    rows = fetch(
        f"SELECT node_id, count(DISTINCT gpu) FROM {gpu_rows('%s', '%s', columns=())} s "
        "WHERE node_id = ANY(%s) GROUP BY node_id",
        [lo, end, list(node_ids)],
    )
    return {node_id: count for node_id, count in rows}


def median_util(windows: Sequence[UtilWindow]) -> dict[int, list[tuple[datetime, float | None]]]:
    """key → [(ts, median GPU util of the window's node)] for each window, one query."""
    if not windows:
        return {}
    values = ", ".join(["(%s::bigint, %s::int, %s::timestamptz, %s::timestamptz)"] * len(windows))
    rows = fetch(
        f"SELECT c.idx, s.ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY s.util) "  # noqa: S608
        f"FROM (VALUES {values}) AS c(idx, node_id, lo, hi) "
        f"JOIN {gpu_rows('%s', '%s', columns=('util',))} s "
        "ON s.node_id = c.node_id AND s.ts > c.lo AND s.ts <= c.hi "
        "GROUP BY c.idx, s.ts ORDER BY c.idx, s.ts",
        [value for row in windows for value in row]
        + [min(row[2] for row in windows), max(row[3] for row in windows)],
    )
    series: dict[int, list[tuple[datetime, float | None]]] = {}
    for idx, ts, util in rows:
        series.setdefault(idx, []).append((ts, util))
    return series


def _floor(moment: datetime, width: timedelta) -> datetime:
    return _EPOCH + ((moment - _EPOCH) // width) * width


def _span_values(spans: Sequence[NodeSpan], rollup: bool) -> tuple[str, list[object]]:
    rows = [(node, _floor(lo, ROLLUP) if rollup else lo, hi) for node, lo, hi in spans]
    sql = ", ".join(["(%s::int, %s::timestamptz, %s::timestamptz)"] * len(rows))
    return sql, [value for row in rows for value in row]


def gpu_series(
    spans: Sequence[NodeSpan], start: datetime, end: datetime
) -> dict[str, list[SeriesPoint]]:
    """``{"util": [...], "tensor": [...]}``: median and worst GPU of the spans per timestamp."""
    if not spans:
        return {"util": [], "tensor": []}
    rollup = end - start > RAW_SPAN
    values, params = _span_values(spans, rollup)
    aggregates = (
        "SELECT s.ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY s.util), min(s.util), "
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY s.tensor), min(s.tensor) "
    )
    if rollup:
        rows = fetch(
            f"{aggregates}FROM ingest_gpurollup s JOIN (VALUES {values}) AS h(node_id, lo, hi) "  # noqa: S608
            "ON s.node_id = h.node_id AND s.ts >= h.lo AND s.ts <= h.hi "
            "WHERE s.ts >= %s AND s.ts <= %s GROUP BY s.ts ORDER BY s.ts",
            [*params, _floor(start, ROLLUP), end],
        )
    else:  # per span: each node's rows through its own keys, hot and compacted
        raw = gpu_rows(*_CLIPPED, columns=("util", "tensor"))
        rows = fetch(
            f"{aggregates}FROM (VALUES {values}) AS h(node_id, lo, hi) CROSS JOIN LATERAL ("  # noqa: S608
            f"SELECT * FROM {raw} r WHERE r.node_id = h.node_id OFFSET 0) s "
            "GROUP BY s.ts ORDER BY s.ts",
            [*params, start, end],
        )
    return {
        "util": [SeriesPoint(ts, p50, low) for ts, p50, low, _, _ in rows],
        "tensor": [SeriesPoint(ts, p50, low) for ts, _, _, p50, low in rows],
    }


def ib_series(spans: Sequence[NodeSpan], start: datetime, end: datetime) -> list[SeriesPoint]:
    """Per-node IB throughput (tx + rx over all ports, bytes/s): median and worst node per timestamp."""
    if not spans:
        return []
    rollup = end - start > RAW_SPAN
    values, params = _span_values(spans, rollup)
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
    else:  # per span and port: through the ports' keys, hot and compacted
        raw = ib_rows(*_CLIPPED, columns=("tx_bytes", "rx_bytes"))
        sql = (
            f"{per_node}FROM (VALUES {values}) AS h(node_id, lo, hi) "
            "JOIN ingest_ibport p ON p.node_id = h.node_id CROSS JOIN LATERAL ("
            f"SELECT * FROM {raw} r WHERE r.port_id = p.id AND r.node_id = p.node_id OFFSET 0) s "
            "GROUP BY s.ts, s.node_id"
        )
        params = [*params, start, end]
    rows = fetch(
        "SELECT ts, percentile_cont(0.5) WITHIN GROUP (ORDER BY bw), min(bw), NULL, NULL "  # noqa: S608
        f"FROM ({sql}) per_node GROUP BY ts ORDER BY ts",
        params,
    )
    return [SeriesPoint(ts, p50, low) for ts, p50, low, _, _ in rows]


def queues_seen(since: datetime) -> list[ClusterQueue]:
    """ClusterQueues seen since ``since``, by name."""
    return list(ClusterQueue.objects.filter(last_seen__gte=since).order_by("name"))


def kueue_buckets(start: datetime, end: datetime, width: int) -> list[tuple[Any, ...]]:
    """Kueue samples in ``(start, end]`` per (queue id, bucket of ``width`` seconds), in order:
    (queue id, bucket, pending active, pending inadmissible, admitted active, admitted, wait p50,
    wait p95) — averages, the admitted sum and the worst p95."""
    return fetch(
        "SELECT cluster_queue_id, date_bin(make_interval(secs => %s), ts, %s) AS bucket, "
        "avg(pending_active), avg(pending_inadmissible), avg(admitted_active), sum(admitted), "
        "avg(wait_p50), max(wait_p95) FROM ingest_kueuesample WHERE ts > %s AND ts <= %s "
        "GROUP BY 1, 2 ORDER BY 1, 2",
        [width, start, start, end],
    )


def stalled_queue_ids(start: datetime, end: datetime) -> set[int]:
    """Queues pending at every sample of ``(start, end]`` (more than one) and admitting nothing."""
    rows = fetch(
        "SELECT cluster_queue_id FROM ingest_kueuesample WHERE ts > %s AND ts <= %s "
        "GROUP BY cluster_queue_id HAVING count(*) > 1 "
        "AND min(coalesce(pending_active, 0) + coalesce(pending_inadmissible, 0)) > 0 "
        "AND coalesce(sum(admitted), 0) = 0",
        [start, end],
    )
    return {queue_id for (queue_id,) in rows}


def eviction_totals(
    queue_ids: Sequence[int], start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Evictions in ``(start, end]`` per queue, kind and reason, largest first within a kind."""
    return list(
        KueueEviction.objects.filter(cluster_queue_id__in=queue_ids, ts__gt=start, ts__lte=end)
        .values("cluster_queue_id", "kind", "reason")
        .annotate(total=Sum("count"))
        .order_by("cluster_queue_id", "kind", "-total")
    )


def latest_quota(queue_ids: Sequence[int], end: datetime) -> list[dict[str, Any]]:
    """The newest quota row at ``end`` of each (queue, flavor, resource)."""
    return [
        dict(row)
        for row in KueueQuota.objects.filter(cluster_queue_id__in=queue_ids, ts__lte=end)
        .order_by("cluster_queue_id", "flavor", "resource", "-ts")
        .distinct("cluster_queue_id", "flavor", "resource")
        .values("cluster_queue_id", "flavor", "resource", "usage", "nominal", "ts")
    ]
