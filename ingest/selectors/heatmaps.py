"""Heatmaps (nodes × time buckets) and rail matrices (nodes × rails) for the dashboard.

Time bucketing happens in SQL (``date_bin`` from the window start); a bucket is labelled by
its start. Node aggregation per heatmap metric is documented in ``ingest.heatmap_metrics``;
long-window heatmaps read the per-node rollups, or their hourly tiles for 5-minute columns.
"""

from __future__ import annotations

import json
from datetime import datetime
from itertools import chain, repeat
from typing import NamedTuple

from django.db import connection

from ..heatmap_metrics import (
    HEATMAP_METRICS,
    MetricSpec,
    display_floats,
    node_rollup_heatmap_sql,
    raw_heatmap_sql,
    tile_heatmap_sql,
    tile_params,
)
from ..models.choices import Family
from .windows import ROLLUP_STEP_SECONDS, bucket_times, fetch, source_table, use_rollup


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


def _fetch_cells(sql: str, params: dict) -> list[tuple]:
    """``fetch`` with float8 printed for display (see ``DISPLAY_FLOAT_DIGITS``)."""
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
    times = bucket_times(start, end, step)
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
    found = fetch(tile_heatmap_sql(spec, sort), tile_params(metric, times[0], len(times)))
    return [name for name, _ in found], [row for _, row in found]


def _column_rows(
    sql: str, spec: MetricSpec, start: datetime, end: datetime, step: int, width: int, sort: str
) -> tuple[list[str], list[str]]:
    # (column index, node ids, cells) rows from ``sql``, transposed here into node rows.
    params = {"step": step, "start": start, "end": end, "start_epoch": start.timestamp()}
    by_id = _json_rows(_fetch_cells(sql, params), width)
    names = fetch("SELECT id, name, leaf_switch FROM ingest_node WHERE id = ANY(%s)", [list(by_id)])
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
    # The device's id column in the samples, its rail name, and the join that names it.
    device, rail, names = (
        ("port_id", "p.device", "JOIN ingest_ibport p ON p.id = a.device ")
        if spec.family == Family.IB
        else ("gpu", "a.device::text", "")
    )
    # Raw samples: the reader's own bounds are the window (a second ts test on decoded history
    # rows would make the planner expect a handful of rows, and probe both joins per row).
    where = "WHERE s.ts >= %s AND s.ts < %s" if rollup else ""
    # Grouped by ids first, names joined to the ~1 row per device after: joining every sample
    # row to its node and port first cost a third of the read (same rows in the same order, so
    # the same values: bench/RESULTS.md "rails, after this run").
    rows = fetch(
        f"SELECT n.name, {rail}, a.value FROM ("
        f"SELECT s.node_id, s.{device} AS device, {spec.outer}({spec.per_device}) AS value "
        f"FROM {source_table(spec.family, rollup, uses=spec.per_device)} s {where} GROUP BY 1, 2) a "
        f"{names}JOIN ingest_node n ON n.id = a.node_id",
        [start, end],
    )
    rails = sorted({r[1] for r in rows}, key=lambda d: (len(d), d))
    nodes = sorted({r[0] for r in rows})
    index = {(name, rail): value for name, rail, value in rows}
    values = [[index.get((n, r)) for r in rails] for n in nodes]
    return RailMatrix(metric, spec.unit, nodes, rails, values)
