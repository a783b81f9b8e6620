"""Assemble what the overview and node pages show from the read APIs (no HTTP, no HTML here)."""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from ingest import node_page, selectors
from ingest.selectors import nodes as inventory
from ingest.selectors import overview

from . import alerting
from .choices import MISSING_AFTER, NodeState
from .rounding import compact_all

ROLLUP_HOURS = 5 / 60


def node_states(firing: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Nodes counted by state: missing (not seen lately), else their worst firing alert."""
    rows = [(node.name, node.last_seen) for node in inventory.nodes()]
    marks = alerting.node_marks(firing)
    counts = dict.fromkeys(NodeState.values, 0)
    reference = max((seen for _, seen in rows), default=None)
    for name, seen in rows:
        if reference is not None and seen < reference - MISSING_AFTER:
            counts[NodeState.MISSING] += 1
        else:
            counts[marks[name]["state"] if name in marks else NodeState.HEALTHY] += 1
    return {"total": len(rows), "by_state": counts, "as_of": reference}


@dataclass
class Utilization:
    """Reported vs real utilization per pool and cluster-wide, and GPU-hours with idle tensor cores.

    ``idle_tensor_gpu_hours``: 5-minute GPU buckets busy by util with idle tensor cores
    (``ingest.drift.IDLE_TENSOR_BUCKET``), not the gpu_tensor_drift rule's sustained condition.
    """

    start: datetime
    end: datetime
    step: int
    times: list[datetime]
    series: dict[str, tuple[list[float | None], list[float | None]]]
    idle_tensor_gpu_hours: dict[str, float]


def _ratio(total: float, count: float) -> float | None:
    return round(total / count, 2) if count else None


def utilization(start: datetime, end: datetime, step: int) -> Utilization:
    """GPU util (reported) against tensor active (real), averaged over GPUs, per ``step``."""
    columns = int((end - start).total_seconds() // step)
    times = [start + timedelta(seconds=step * i) for i in range(columns)]
    index = {t: i for i, t in enumerate(times)}
    sums: dict[str, list[list[float]]] = defaultdict(lambda: [[0.0, 0.0, 0] for _ in times])
    lost: dict[str, float] = defaultdict(float)
    for bucket, pool, util, tensor, count, drifted in overview.utilization_by_pool(
        start, end, step
    ):
        if bucket not in index:
            continue
        for name in (pool, "cluster"):
            cell = sums[name][index[bucket]]
            cell[0] += util or 0.0
            cell[1] += tensor or 0.0
            cell[2] += count
            lost[name] += drifted * ROLLUP_HOURS
    series = {
        name: ([_ratio(c[0], c[2]) for c in cells], [_ratio(c[1], c[2]) for c in cells])
        for name, cells in sorted(sums.items(), key=lambda item: item[0] != "cluster")
    }
    return Utilization(start, end, step, times, series, {k: round(v, 1) for k, v in lost.items()})


def pool_counts(
    start: datetime, end: datetime, step: int, reporting: dict[str, list[bool]]
) -> tuple[list[datetime], dict[str, list[int | None]]]:
    """Nodes per pool at each ``step`` column from ``start`` (then at ``end``), None in the
    columns where no node of the pool reported (``reporting[pool][k]``): a gap, not a line
    drawn across hours without data."""
    changes, timeline = pool_timeline(start, end)
    columns = [
        start + timedelta(seconds=step * k)
        for k in range(int((end - start).total_seconds() // step))
    ]
    # The count in force at a column's start: the last change at or before it.
    index = [min(bisect_right(changes, t), len(changes) - 1) - 1 for t in columns]
    counts: dict[str, list[int | None]] = {}
    for pool, values in timeline.items():
        seen = reporting.get(pool, [])
        shown = [values[i] if k < len(seen) and seen[k] else None for k, i in enumerate(index)]
        counts[pool] = [*shown, shown[-1]] if shown else []
    return [*columns, end], counts


def pool_timeline(start: datetime, end: datetime) -> tuple[list[datetime], dict[str, list[int]]]:
    """Node counts per pool as a step function over [start, end] (PoolChange, else Node.pool)."""
    pool_of = inventory.node_pools()
    inside = inventory.pool_changes_between(start, end)
    first_inside: dict[int, str] = {}
    for change in inside:
        first_inside.setdefault(change.node_id, change.pool)
    pool_of.update(first_inside)
    pool_of.update(inventory.pools_before(start))
    pools = sorted(set(pool_of.values()) | {c.pool for c in inside})
    times = [start]
    counts = {p: [sum(1 for v in pool_of.values() if v == p)] for p in pools}
    for change in inside:
        pool_of[change.node_id] = change.pool
        times.append(change.ts)
        for p in pools:
            counts[p].append(sum(1 for v in pool_of.values() if v == p))
    times.append(end)
    for p in pools:
        counts[p].append(counts[p][-1])
    return times, counts


def family_health(now: datetime) -> list[dict[str, Any]]:
    """Ingest health per family; stale when the last success is older than three intervals."""
    stale_after = timedelta(seconds=3 * settings.INGEST_INTERVAL_SECONDS)
    rows = []
    for health in selectors.family_health():
        stale = health.last_success is None or now - health.last_success > stale_after
        rows.append(
            {
                "family": health.family,
                "last_success": health.last_success,
                "lag_seconds": health.lag_seconds,
                "rows": health.rows,
                "errors": health.errors,
                "last_error": health.last_error[:300],
                "ok": not stale and not health.errors,
            }
        )
    return rows


def queue_summary() -> list[dict[str, Any]]:
    """Latest Kueue sample per ClusterQueue (workload counts as integers), and the highest
    admission-wait p95 of a step in the hour up to it (``ingest.selectors.overview.WAIT_WINDOW``)."""
    rows = [queue._asdict() for queue in overview.latest_queues()]
    for row in rows:
        for key in ("pending_active", "pending_inadmissible", "admitted_active"):
            row[key] = _count(row[key])
    return rows


def _count(value: float | None) -> int | float | None:
    """A gauge of workloads (stored as float8) as the integer it is."""
    return int(value) if value is not None and float(value).is_integer() else value


def _sum(*columns: list[float | None]) -> list[float | None]:
    """Step-wise sum of columns (left to right, from 0); None where every column is None.

    A missing value adds 0: the same float as skipping it (a partial sum from 0 is never
    -0.0, and x + 0 is x), without a list of the known values per step.
    """
    if not any(None in column for column in columns):
        return list(map(sum, zip(*columns, strict=True)))
    zeroed = [[0 if v is None else v for v in column] for column in columns]
    sums: list[float | None] = list(map(sum, zip(*zeroed, strict=True)))
    first, others = columns[0], columns[1:]
    for j, value in enumerate(first):
        if value is None and all(column[j] is None for column in others):
            sums[j] = None
    return sums


def _scaled(column: list[float | None], factor: float) -> list[float | None]:
    return [None if v is None else v * factor for v in column]


def _device_columns(
    result: Any, derive: Callable[[dict[str, list]], dict[str, list]]
) -> dict[str, dict[str, list]]:
    """NodeSeries → {device: {"times": [...], name: [...]}}: ``derive`` maps stored to shown columns."""
    out: dict[str, dict[str, list]] = {}
    for device, columns in result.series.items():
        out[device] = {"times": result.times}
        for name, values in derive(columns).items():
            out[device][name] = compact_all(values)
    return out


def _gpu_columns(c: dict[str, list]) -> dict[str, list]:
    """A GPU's shown columns: util %, tensor %, power W, NVLink bytes/s and error increases."""
    return {
        "util": c["util"],
        "tensor": _scaled(c["tensor"], 100),
        "power": c["power"],
        "nvlink_bw": c["nvlink_bw"],
        "nvlink_errors": _sum(c["nvlink_crc_flit"], c["nvlink_crc_data"], c["nvlink_replay"],
                              c["nvlink_recovery"]),
    }  # fmt: skip


def _port_columns(c: dict[str, list]) -> dict[str, list]:
    """A port's shown columns: tx+rx bytes/s, xmit_wait ticks/s, error increases."""
    return {
        "throughput": _sum(c["tx_bytes"], c["rx_bytes"]),
        "xmit_wait": c["xmit_wait"],
        "errors": _sum(c["symbol_errors"], c["link_downed"], c["link_error_recovery"], c["rcv_errors"],
                       c["local_link_integrity"], c["excessive_buffer_overrun"]),
    }  # fmt: skip


def node_gpus(node: str, start: datetime, end: datetime, step: int) -> dict[str, dict[str, list]]:
    """Per-GPU columns: util %, tensor %, power W, NVLink bytes/s and error increases."""
    result = selectors.node_gpu_series(node, start, end, step, settings.DASHBOARD_NODE_TILES)
    return _device_columns(result, _gpu_columns)


def node_ports(node: str, start: datetime, end: datetime, step: int) -> dict[str, dict[str, list]]:
    """Per-port columns: tx+rx bytes/s, xmit_wait ticks/s, error increases."""
    result = selectors.node_ib_series(node, start, end, step, settings.DASHBOARD_NODE_TILES)
    return _device_columns(result, _port_columns)


def node_devices(
    node: str, start: datetime, end: datetime, step: int
) -> tuple[dict[str, dict[str, list]], dict[str, dict[str, list]]]:
    """(``node_gpus``, ``node_ports``) in one read of both families (``ingest.node_page``)."""
    gpus, ports = node_page.node_series(node, start, end, step, settings.DASHBOARD_NODE_TILES)
    return _device_columns(gpus, _gpu_columns), _device_columns(ports, _port_columns)


def node_list() -> list[dict[str, Any]]:
    """Every node with pool, leaf switch, last seen, its worst firing alert, hardware verdict
    (None: healthy) and maintenance (None: in service)."""
    marks = alerting.node_marks()
    hardware, maintenance = alerting.hardware(), alerting.maintenance_nodes()
    reference = inventory.latest_seen()
    rows = []
    for node in inventory.nodes():
        missing = reference is not None and node.last_seen < reference - MISSING_AFTER
        state = (
            NodeState.MISSING
            if missing
            else marks.get(node.name, {}).get("state", NodeState.HEALTHY)
        )
        rows.append({"node": node, "state": state, "hardware": hardware.get(node.name),
                     "maintenance": maintenance.get(node.name)})  # fmt: skip
    return rows
