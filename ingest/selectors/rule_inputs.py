"""What the alert rules read of ingest's tables, as typed rows (``rule_rows``).

``alerts.inputs`` decides the windows (unix-second bounds), prefilters and history marks;
each read here runs one query of ``rule_sql`` and records its seconds in ``TIMINGS`` under
its dataset's label (for the bench and ``Evaluation.timings``). Raw samples are read hot
and compacted alike.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import connection

from ..models.choices import Family
from . import rule_sql as q
from .rule_rows import (
    FamilyCursor,
    GoneXid,
    GpuHealthPoint,
    GpuPoint,
    IbErrorPoint,
    IbPoint,
    IbPortInfo,
    KueuePoint,
    NodeThroughput,
    NvlinkPoint,
    XidPoint,
)

Bounds = list[float]  # [start, end] in unix seconds: start < ts <= end
Predicate = tuple[str, list[Any], str | None]  # prefilter SQL, its parameters, the history mark

#: Seconds spent per read since the last ``TIMINGS.clear()``.
TIMINGS: dict[str, float] = {}


def _rows(sql: str, params: list[Any] | dict[str, Any], label: str = "") -> list[tuple]:
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if label:
        TIMINGS[label] = time.perf_counter() - started
    return rows


def cursors() -> list[FamilyCursor]:
    """Every family's ingest cursor with its last success."""
    return list(map(FamilyCursor._make, _rows(q.CURSORS, [])))


def gpu_series(bounds: Bounds, predicate: Predicate) -> list[GpuPoint]:
    """Whole series in the window of the GPUs with a sample matching the prefilter."""
    sql, params, mark = predicate
    window = q.twice(bounds)
    rows = _rows(q.gpu_candidates(mark, sql), [*window, *params, *window], "gpu")
    return list(map(GpuPoint._make, rows))


def gpu_candidate_keys(bounds: Bounds, predicate: Predicate) -> list[tuple[int, int]]:
    """(node id, GPU) of the GPUs with a sample matching the prefilter in the window, sorted."""
    sql, params, mark = predicate
    rows = _rows(q.gpu_candidate_keys(mark, sql), [*q.twice(bounds), *params], "gpu_keys")
    return sorted((int(node), int(gpu)) for node, gpu in rows)


def gpu_series_of(bounds: Bounds, keys: list[tuple[int, int]]) -> list[GpuPoint]:
    """Whole series in the window of the GPUs ``keys`` (node id, GPU), as ``gpu_series``."""
    arrays = [[node for node, _ in keys], [gpu for _, gpu in keys]]
    return list(map(GpuPoint._make, _rows(q.GPU_SERIES_OF, [*arrays, *q.twice(bounds)], "gpu")))


def nvlink_steps(bounds: Bounds) -> list[NvlinkPoint]:
    """Steps whose NVLink CRC counters increased, sorted."""
    return sorted(map(NvlinkPoint._make, _rows(q.NVLINK, q.twice(bounds), "nvlink")))


def gpu_sample_times(bounds: Bounds, every: bool) -> dict[str, list[float]]:
    """node → its GPU sample times in the window (``every``), else only its newest one."""
    rows = _rows(q.GPU_TIMES if every else q.GPU_LAST, q.twice(bounds), "gpu_times")
    return {node: sorted(times) for node, times in rows}


def ib_throughput(bounds: Bounds) -> list[NodeThroughput]:
    """Per node and step, tx + rx over all its ports."""
    return list(map(NodeThroughput._make, _rows(q.IB_THROUGHPUT, bounds, "ib_throughput")))


def ib_series(bounds: Bounds, predicate: Predicate) -> list[IbPoint]:
    """Whole series in the window of the ports with a sample matching the prefilter."""
    sql, params, mark = predicate
    window = q.twice(bounds)
    rows = _rows(q.ib_candidates(mark, sql), [*window, *params, *window], "ib")
    return list(map(IbPoint._make, rows))


def ib_last(bounds: Bounds, nodes: list[str]) -> dict[str, float]:
    """node → its newest IB sample time in the window, for the given nodes."""
    if not nodes:
        return {}
    return dict(_rows(q.IB_LAST, [*bounds, nodes, *bounds], "ib_last"))


def ib_errors(bounds: Bounds) -> list[IbErrorPoint]:
    """Port samples in the window with an error counter increase or a non-active state."""
    return list(map(IbErrorPoint._make, _rows(q.IB_ERRORS, q.twice(bounds), "ib_errors")))


def xids(bounds: Bounds) -> list[XidPoint]:
    """XID events in the window."""
    return list(map(XidPoint._make, _rows(q.XIDS, bounds, "xids")))


def kueue(bounds: Bounds) -> list[KueuePoint]:
    """ClusterQueue samples in the window."""
    return list(map(KueuePoint._make, _rows(q.KUEUE, bounds, "kueue")))


def gpu_health(bounds: Bounds, throttle_mask: int) -> list[GpuHealthPoint]:
    """Unhealthy GPU samples of the window (throttled: a clock event reason in ``throttle_mask``)."""
    sql = q.GPU_HEALTH.format(mask=int(throttle_mask))
    return list(map(GpuHealthPoint._make, _rows(sql, q.twice(bounds), "gpu_health")))


def xid_gone(start: float, end: float, gap: float, codes: list[int]) -> list[GoneXid]:
    """Each GPU's latest XID in (start, end] when its code is in ``codes``, with its return."""
    params = {"start": start, "end": end, "gap": gap, "codes": codes}
    return list(map(GoneXid._make, _rows(q.XID_GONE, params, "xid_gone")))


def leaf_switches(ports: list[tuple[str, str, int]]) -> dict[tuple[str, str, int], str]:
    """(node, device, port) → leaf switch, for the given ports that have one."""
    if not ports:
        return {}
    rows = _rows(q.LEAF_SWITCHES, [list(column) for column in zip(*ports, strict=True)])
    return {(node, device, port): leaf for node, device, port, leaf in rows}


def ib_ports() -> list[IbPortInfo]:
    """Every IB port with its leaf switch."""
    return list(map(IbPortInfo._make, _rows(q.IB_PORTS, [], "ib_ports")))


def last_seen(
    family: Family, bounds: Bounds, seen_after: float, present: list[str]
) -> dict[str, float]:
    """node → newest ``family`` sample in the window, of the nodes seen after ``seen_after``
    that are not in ``present``."""
    return dict(_rows(q.LAST_SEEN[family], [*q.twice(bounds), seen_after, present]))
