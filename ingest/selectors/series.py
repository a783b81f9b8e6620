"""Per-device series of one node, and every node's latest values, for the dashboard.

A node's per-device series of 5-minute columns read the hourly node tiles
(``ingest.node_tiles``); other windows the rollups or raw samples (``windows.use_rollup``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from core import clock

from .. import node_tiles
from ..history import gpu_rows, ib_rows
from ..models.choices import Family
from ..store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS
from .windows import (
    ALL_AFTER,
    NODE_ROLLUP_WINDOW,
    ROLLUP_STEP_SECONDS,
    bucket_times,
    fetch,
    source_table,
    use_rollup,
)

LATEST_GPU, LATEST_IB = ("util", "tensor", "power", "temp"), ("tx_bytes", "rx_bytes", "state")


class NodeSeries(NamedTuple):
    """Per-device series of one node: ``series[device][column][j]`` at ``times[j]``."""

    node: str
    times: list[datetime]
    series: dict[str, dict[str, list[float | None]]]
    step: int
    source: str


class NodePlan(NamedTuple):
    """How a node's series over a window are read: rollups or raw rows, at what step, tiles or not."""

    rollup: bool
    step: int
    tiled: bool


def node_plan(start: datetime, end: datetime, step: int, tiles: bool) -> NodePlan:
    """Rollups at >= 6 h or where raw rows are gone (then at least 5-minute steps), and the
    hourly node tiles for those where ``tiles`` and the tiles cover the window."""
    # 6 h at full width asks for 60 s steps: 5× the rollups' points, from ~2,300 raw rows.
    rollup = end - start >= NODE_ROLLUP_WINDOW or use_rollup(start, end, step)
    step = max(step, ROLLUP_STEP_SECONDS) if rollup else step
    return NodePlan(rollup, step, rollup and tiles and node_tiles.covers(start, end, step))


def _node_series(
    node: str, family: str, start: datetime, end: datetime, step: int, tiles: bool
) -> NodeSeries:
    rollup, step, tiled = node_plan(start, end, step, tiles)
    times = bucket_times(start, end, step)
    until: datetime | None = None
    series: dict[str, dict[str, list[float | None]]] = {}
    if tiled:
        until, series = node_tiles.series(node, family, start, end)
    if until is None:  # not tiled (or no cursor: what the tiles hold is not known)
        series = _stored_series(node, family, start, end, step, rollup)
    kind = "rollup" if rollup else "raw"
    return NodeSeries(node, times, dict(sorted(series.items())), step, kind)


def _stored_series(
    node: str, family: str, start: datetime, end: datetime, step: int, rollup: bool
) -> dict[str, dict[str, list[float | None]]]:
    """device → column → bucket means of the rollup (or raw) rows in [start, end), ``step`` wide."""
    columns = GPU_VALUE_COLUMNS if family == Family.GPU else IB_VALUE_COLUMNS
    # By the leading key column (IB: port_id via the node's ports; s.node_id has no index
    # and scanned the whole window) and constant ts bounds: index scans in pruned partitions.
    ib, table = family == Family.IB, source_table(family, rollup, "%(start)s", "%(end)s")
    device, owner = ("p.device", "p.node_id") if ib else ("s.gpu::text", "s.node_id")
    source = f"ingest_ibport p JOIN {table} s ON s.port_id = p.id" if ib else f"{table} s"
    # Raw IB rows also by their own node_id: compacted history is indexed on it.
    also = "AND s.node_id = p.node_id" if ib and not rollup else ""
    aggregates = ", ".join(f"avg(s.{c})" for c in columns)
    # The column index comes from Postgres as an int: no timestamp parsed per row.
    index = "floor((date_part('epoch', s.ts) - %(start_epoch)s) / %(step)s)::int"
    rows = fetch(
        f"SELECT {device}, {index} AS j, {aggregates} "
        f"FROM {source} WHERE {owner} = (SELECT id FROM ingest_node WHERE name = %(node)s) {also} "
        f"AND s.ts >= %(start)s AND s.ts < %(end)s GROUP BY 1, 2",
        {"start": start, "end": end, "node": node, "start_epoch": start.timestamp(), "step": step},
    )
    width = len(bucket_times(start, end, step))
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
    return _node_series(node, Family.GPU, start, end, step, tiles)


def node_ib_series(
    node: str, start: datetime, end: datetime, step: int, tiles: bool = True
) -> NodeSeries:
    """Per-port series of one node (keys are devices, e.g. "mlx5_0"), every IbSample column,
    bucket means; read as ``node_gpu_series``."""
    return _node_series(node, Family.IB, start, end, step, tiles)


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
    gpu = fetch(
        "SELECT n.name, max(l.ts), avg(l.util), avg(l.tensor), sum(l.power), max(l.temp) FROM ("
        f" SELECT DISTINCT ON (node_id, gpu) * FROM {gpu_rows('%s', ALL_AFTER, columns=LATEST_GPU)}"
        " ORDER BY node_id, gpu, ts DESC) l JOIN ingest_node n ON n.id = l.node_id GROUP BY n.name",
        [since],
    )
    ib = fetch(
        # active_ports is NULL (unknown) when no port reports a state (treydock exports none).
        "SELECT n.name, max(l.ts), sum(l.tx_bytes), sum(l.rx_bytes),"
        " CASE WHEN count(l.state) = 0 THEN NULL ELSE count(*) FILTER (WHERE l.state = 4) END FROM ("
        f" SELECT DISTINCT ON (port_id) * FROM {ib_rows('%s', ALL_AFTER, columns=LATEST_IB)}"
        " ORDER BY port_id, ts DESC) l JOIN ingest_node n ON n.id = l.node_id GROUP BY n.name",
        [since],
    )
    no_ib = (None, None, None, None)
    latest = {name: NodeLatest._make((name, *row, *no_ib)) for name, *row in gpu}
    for name, *row in ib:
        base = latest.get(name) or NodeLatest._make((name, None, None, None, None, None, *no_ib))
        latest[name] = base._replace(ib_ts=row[0], ib_tx=row[1], ib_rx=row[2], active_ports=row[3])
    return dict(sorted(latest.items()))
