"""The read API other apps use (dashboard, alerts): plain structures, no ORM objects.

Raw samples or 5-minute rollups are chosen by ``use_rollup``: rollups when the
window is longer than 12 h (node series: from 6 h) or the resolution is ≥ 300 s. Time
bucketing happens in SQL (``date_bin`` from the window start); a bucket is
labelled by its start. Raw samples are read through ``ingest.history.gpu_rows`` /
``ib_rows``: hot rows and compacted history alike. Node aggregation per heatmap metric is documented in
``ingest.heatmap_metrics``; long-window heatmaps read the per-node rollups, or their hourly
tiles for 5-minute columns. A node's per-device series of 5-minute columns read the hourly
node tiles (``ingest.node_tiles``).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from itertools import chain, repeat
from typing import NamedTuple

from django.db import connection

from core import clock

from . import node_tiles
from .health import current_lags
from .heatmap_metrics import (
    HEATMAP_METRICS,
    MetricSpec,
    display_floats,
    node_rollup_heatmap_sql,
    raw_heatmap_sql,
    tile_heatmap_sql,
    tile_params,
)

# gpu_rows / ib_rows: the raw-sample FROM items other apps' own SQL reads (hot + compacted).
from .history import columns_in, gpu_rows, ib_rows
from .models import FamilyHealth, XidEvent
from .store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS

ROLLUP_WINDOW = timedelta(hours=12)
ROLLUP_STEP_SECONDS = 300
NODE_ROLLUP_WINDOW = timedelta(hours=6)
#: Upper bound of a raw read "from ts on" (SQL).
ALL_AFTER = "'infinity'"
LATEST_GPU, LATEST_IB = ("util", "tensor", "power", "temp"), ("tx_bytes", "rx_bytes", "state")


class HeatmapMatrix(NamedTuple):
    """``values[i][j]`` is node ``nodes[i]`` in the bucket starting ``times[j]`` (None: no data).

    Values are rounded for display to 4 significant digits.
    """

    metric: str
    unit: str
    nodes: list[str]
    times: list[datetime]
    values: list[list[float | None]]
    step: int
    source: str  # "raw" or "rollup"


class HeatmapRows(NamedTuple):
    """A heatmap as Postgres printed it: ``rows[i]`` is the JSON array text of node ``nodes[i]``.

    Cells as in ``HeatmapMatrix.values`` (4 significant digits, ``null``: no data); what the
    JSON endpoint sends, without a Python float per cell.
    """

    metric: str
    unit: str
    nodes: list[str]
    times: list[datetime]
    rows: list[str]
    step: int
    source: str  # "raw" or "rollup"


class RailMatrix(NamedTuple):
    """``values[i][j]``: node ``nodes[i]``, rail ``rails[j]`` (IB device or GPU index), over the window."""

    metric: str
    unit: str
    nodes: list[str]
    rails: list[str]
    values: list[list[float | None]]


class NodeSeries(NamedTuple):
    """Per-device series of one node: ``series[device][column][j]`` at ``times[j]``."""

    node: str
    times: list[datetime]
    series: dict[str, dict[str, list[float | None]]]
    step: int
    source: str


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


def use_rollup(start: datetime, end: datetime, step: int | None = None) -> bool:
    """Rollups for windows over 12 h or resolutions of 300 s and more."""
    return end - start > ROLLUP_WINDOW or (step is not None and step >= ROLLUP_STEP_SECONDS)


def _table(family: str, rollup: bool, lo: str = "%s", hi: str = "%s", uses: str = "") -> str:
    """The rollup table, or the raw samples (hot and compacted) with ``lo <= ts < hi``;
    ``uses``: SQL naming the value columns read (default: all of them)."""
    if rollup:
        return f"ingest_{family}rollup"
    columns = columns_in(family, uses) if uses else None
    return (gpu_rows if family == "gpu" else ib_rows)(lo, hi, exclusive=True, columns=columns)


def _bucket_times(start: datetime, end: datetime, step: int) -> list[datetime]:
    count = max(1, -(-int((end - start).total_seconds()) // step))
    return [start + timedelta(seconds=step * i) for i in range(count)]


def _fetch(sql: str, params: dict | list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _fetch_cells(sql: str, params: dict) -> list[tuple]:
    """``_fetch`` with float8 printed for display (see ``DISPLAY_FLOAT_DIGITS``)."""
    with connection.cursor() as cursor, display_floats(cursor):
        cursor.execute(sql, params)
        return cursor.fetchall()


def heatmap_rows(
    metric: str,
    start: datetime,
    end: datetime,
    step: int,
    sort: str = "name",
    tiles: bool = True,
) -> HeatmapRows:
    """Nodes × time buckets of ``metric`` (see HEATMAP_METRICS) as JSON rows; sort: name | topology | worst.

    SQL buckets, aggregates and prints the cells: rollup windows of 5-minute columns on the
    5-minute grid (the 24 h view) from the hourly heatmap tiles (``tiles=False``: from the
    node rollups they are made of, same result), other rollup windows from the per-node
    rollups (one row per node and 5 minutes), short windows from raw samples. Only nodes
    with data in the window appear.
    """
    spec, rollup = HEATMAP_METRICS[metric], use_rollup(start, end, step)
    step = max(step, ROLLUP_STEP_SECONDS) if rollup else step
    times = _bucket_times(start, end, step)
    aligned = rollup and step == ROLLUP_STEP_SECONDS and int(start.timestamp()) % step == 0
    if aligned and tiles and start.microsecond == 0:
        nodes, rows = _tile_rows(metric, spec, times, sort)
    else:
        sql = node_rollup_heatmap_sql(spec, aligned) if rollup else raw_heatmap_sql(spec)
        nodes, rows = _column_rows(sql, spec, start, end, step, len(times), sort)
    source = "rollup" if rollup else "raw"
    return HeatmapRows(metric, spec.unit, nodes, times, rows, step, source)


def _tile_rows(
    metric: str, spec: MetricSpec, times: list[datetime], sort: str
) -> tuple[list[str], list[str]]:
    # Postgres slices, joins and sorts the rows: one (name, JSON array text) per node.
    found = _fetch(tile_heatmap_sql(spec, sort), tile_params(metric, times[0], len(times)))
    return [name for name, _ in found], [row for _, row in found]


def _column_rows(
    sql: str, spec: MetricSpec, start: datetime, end: datetime, step: int, width: int, sort: str
) -> tuple[list[str], list[str]]:
    # (column index, node ids, cells) rows from ``sql``, transposed here into node rows.
    params = {"step": step, "start": start, "end": end, "start_epoch": start.timestamp()}
    by_id = _json_rows(_fetch_cells(sql, params), width)
    names = _fetch(
        "SELECT id, name, leaf_switch FROM ingest_node WHERE id = ANY(%s)", [list(by_id)]
    )
    rows = {name: by_id[str(pk)] for pk, name, _ in names}
    nodes = _sorted_nodes(rows, {name: leaf for _, name, leaf in names}, sort, spec.worst)
    return nodes, [rows[n] for n in nodes]


def heatmap(
    metric: str,
    start: datetime,
    end: datetime,
    step: int,
    sort: str = "name",
    tiles: bool = True,
) -> HeatmapMatrix:
    """``heatmap_rows`` with the cells as floats (None: no data)."""
    result = heatmap_rows(metric, start, end, step, sort, tiles)
    values = [json.loads(row) for row in result.rows]
    return HeatmapMatrix(
        metric, result.unit, result.nodes, result.times, values, result.step, result.source
    )


def _json_rows(columns: list[tuple[int, str, str]], width: int) -> dict[str, str]:
    """Node id → JSON array text of its cells, from one (index, node ids, cells) row per column.

    The cells are only split, reordered and joined, never parsed, and every step loops in C
    (300 k cells at 1,024 nodes × 24 h). Each column lists its nodes in heap order, which
    differs between columns once ingest has updated rows; such a column is put into the
    common order through a dict.
    """
    columns = [c for c in columns if 0 <= c[0] < width]
    first = columns[0][1] if columns else ""
    if all(ids == first for _, ids, _ in columns):  # no updates since the rows were written
        order, split = first.split(",") if first else [], {}
    else:
        split = {ids: ids.split(",") for _, ids, _ in columns}
        order = list(dict.fromkeys(chain.from_iterable(split.values())))
    grid = [["null"] * len(order)] * width
    for j, ids, cells in columns:
        values = cells.split(",")
        if ids in split:
            values = list(
                map(dict(zip(split[ids], values, strict=True)).get, order, repeat("null"))
            )
        grid[j] = values
    return {i: f"[{','.join(row)}]" for i, row in zip(order, zip(*grid, strict=True), strict=True)}


def _sorted_nodes(rows: dict[str, str], leaves: dict[str, str], sort: str, worst: str) -> list[str]:
    if sort == "topology":
        return sorted(rows, key=lambda n: (leaves.get(n) or "~", n))
    if sort == "worst":
        sign = -1 if worst == "high" else 1

        def badness(name: str) -> tuple[float, str]:
            known = [v for v in json.loads(rows[name]) if v is not None]
            return (sign * sum(known) / len(known) if known else float("inf"), name)

        return sorted(rows, key=badness)
    return sorted(rows)


def rail_matrix(metric: str, start: datetime, end: datetime) -> RailMatrix:
    """Nodes × rails (IB device or GPU index) of ``metric`` over the whole window.

    Per device the window's values are combined with the metric's ``outer``
    aggregate (mean for rates/gauges, total for errors, minimum for state).
    """
    spec, rollup = HEATMAP_METRICS[metric], use_rollup(start, end)
    device = "p.device" if spec.family == "ib" else "s.gpu::text"
    join = "JOIN ingest_ibport p ON p.id = s.port_id" if spec.family == "ib" else ""
    # Raw samples: the reader's own bounds are the window (a second ts test on decoded history
    # rows would make the planner expect a handful of rows, and probe both joins per row).
    where = "WHERE s.ts >= %s AND s.ts < %s" if rollup else ""
    rows = _fetch(
        f"SELECT n.name, {device}, {spec.outer}({spec.per_device}) "
        f"FROM {_table(spec.family, rollup, uses=spec.per_device)} s {join} "
        f"JOIN ingest_node n ON n.id = s.node_id {where} GROUP BY 1, 2",
        [start, end],
    )
    rails = sorted({r[1] for r in rows}, key=lambda d: (len(d), d))
    nodes = sorted({r[0] for r in rows})
    index = {(name, rail): value for name, rail, value in rows}
    values = [[index.get((n, r)) for r in rails] for n in nodes]
    return RailMatrix(metric, spec.unit, nodes, rails, values)


def _node_series(
    node: str, family: str, start: datetime, end: datetime, step: int, tiles: bool
) -> NodeSeries:
    # 6 h at full width asks for 60 s steps: 5× the rollups' points, from ~2,300 raw rows.
    rollup = end - start >= NODE_ROLLUP_WINDOW or use_rollup(start, end, step)
    step = max(step, ROLLUP_STEP_SECONDS) if rollup else step
    times = _bucket_times(start, end, step)
    until: datetime | None = None
    series: dict[str, dict[str, list[float | None]]] = {}
    if rollup and tiles and node_tiles.covers(start, end, step):
        until, series = node_tiles.series(node, family, start, end)
    if until is None:  # not tiled (or no cursor: what the tiles hold is not known)
        series = _stored_series(node, family, start, end, step, rollup)
    kind = "rollup" if rollup else "raw"
    return NodeSeries(node, times, dict(sorted(series.items())), step, kind)


def _stored_series(
    node: str, family: str, start: datetime, end: datetime, step: int, rollup: bool
) -> dict[str, dict[str, list[float | None]]]:
    """device → column → bucket means of the rollup (or raw) rows in [start, end), ``step`` wide."""
    columns = GPU_VALUE_COLUMNS if family == "gpu" else IB_VALUE_COLUMNS
    # By the leading key column (IB: port_id via the node's ports; s.node_id has no index
    # and scanned the whole window) and constant ts bounds: index scans in pruned partitions.
    ib, table = family == "ib", _table(family, rollup, "%(start)s", "%(end)s")
    device, owner = ("p.device", "p.node_id") if ib else ("s.gpu::text", "s.node_id")
    source = f"ingest_ibport p JOIN {table} s ON s.port_id = p.id" if ib else f"{table} s"
    # Raw IB rows also by their own node_id: compacted history is indexed on it.
    also = "AND s.node_id = p.node_id" if ib and not rollup else ""
    aggregates = ", ".join(f"avg(s.{c})" for c in columns)
    # The column index comes from Postgres as an int: no timestamp parsed per row.
    index = "floor((date_part('epoch', s.ts) - %(start_epoch)s) / %(step)s)::int"
    rows = _fetch(
        f"SELECT {device}, {index} AS j, {aggregates} "
        f"FROM {source} WHERE {owner} = (SELECT id FROM ingest_node WHERE name = %(node)s) {also} "
        f"AND s.ts >= %(start)s AND s.ts < %(end)s GROUP BY 1, 2",
        {"start": start, "end": end, "node": node, "start_epoch": start.timestamp(), "step": step},
    )
    width = len(_bucket_times(start, end, step))
    series: dict[str, dict[str, list[float | None]]] = {}
    for dev, j, *values in rows:
        per_column = series.get(dev)
        if per_column is None:
            per_column = series[dev] = {c: [None] * width for c in columns}
        for name, value in zip(columns, values, strict=True):
            per_column[name][j] = None if value is None else float(value)
    return series


def node_gpu_series(
    node: str, start: datetime, end: datetime, step: int, tiles: bool = True
) -> NodeSeries:
    """Per-GPU series of one node (keys "0".."7"), every GpuSample column, bucket means.

    5-minute columns of rollup windows come from the hourly node tiles (``tiles=False``:
    from the rollups they copy, same result), others from the rollups or raw samples.
    """
    return _node_series(node, "gpu", start, end, step, tiles)


def node_ib_series(
    node: str, start: datetime, end: datetime, step: int, tiles: bool = True
) -> NodeSeries:
    """Per-port series of one node (keys are devices, e.g. "mlx5_0"), every IbSample column,
    bucket means; read as ``node_gpu_series``."""
    return _node_series(node, "ib", start, end, step, tiles)


class NodeLatest(NamedTuple):
    """A node's most recent values (last 10 minutes): GPU means and IB sums/counts."""

    node: str
    gpu_ts: datetime | None
    util: float | None
    tensor: float | None
    power: float | None
    temp: float | None
    ib_ts: datetime | None
    ib_tx: float | None
    ib_rx: float | None
    active_ports: int | None


def latest_per_node(now: datetime | None = None) -> dict[str, NodeLatest]:
    """node name → ``NodeLatest`` from each GPU's / port's latest sample of the last 10 minutes."""
    since = (now or clock.now()) - timedelta(minutes=10)
    gpu = _fetch(
        "SELECT n.name, max(l.ts), avg(l.util), avg(l.tensor), sum(l.power), max(l.temp) FROM ("
        f" SELECT DISTINCT ON (node_id, gpu) * FROM {gpu_rows('%s', ALL_AFTER, columns=LATEST_GPU)}"
        " ORDER BY node_id, gpu, ts DESC) l JOIN ingest_node n ON n.id = l.node_id GROUP BY n.name",
        [since],
    )
    ib = _fetch(
        # active_ports is NULL (unknown) when no port reports a state (treydock exports none).
        "SELECT n.name, max(l.ts), sum(l.tx_bytes), sum(l.rx_bytes),"
        " CASE WHEN count(l.state) = 0 THEN NULL ELSE count(*) FILTER (WHERE l.state = 4) END FROM ("
        f" SELECT DISTINCT ON (port_id) * FROM {ib_rows('%s', ALL_AFTER, columns=LATEST_IB)}"
        " ORDER BY port_id, ts DESC) l JOIN ingest_node n ON n.id = l.node_id GROUP BY n.name",
        [since],
    )
    latest = {name: NodeLatest(name, *row, None, None, None, None) for name, *row in gpu}
    for name, *row in ib:
        base = latest.get(name) or NodeLatest(
            name, None, None, None, None, None, None, None, None, None
        )
        latest[name] = base._replace(ib_ts=row[0], ib_tx=row[1], ib_rx=row[2], active_ports=row[3])
    return dict(sorted(latest.items()))


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
    rows = _fetch(
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
    rows = _fetch(
        f"SELECT n.name, p.device, p.port, s.ts, {', '.join('s.' + c for c in IB_VALUE_COLUMNS)} "
        f"FROM {ib_rows('%s', '%s')} s JOIN ingest_ibport p ON p.id = s.port_id "
        f"JOIN ingest_node n ON n.id = s.node_id WHERE s.ts > %s AND s.ts <= %s {where} ORDER BY 1, 2, 3, 4",
        [start, end, start, end, *extra],
    )
    return [IbRow._make(row) for row in rows]
