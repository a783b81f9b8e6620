"""5-minute rollups of the raw GPU and IB samples, kept far longer than raw data.

A rollup row at ``ts`` summarises the raw rows with ``ts <= raw.ts < ts + 5 min``:
gauges and rates are averaged, increases summed, link state is the minimum
(a port that dropped inside the bucket shows it), the saturation mask is the
bitwise OR. Refreshing recomputes whole buckets from raw rows, so it is
idempotent and a bucket completed over two cycles ends up right.

Per-node rollups (``ingest_noderollup``) are then recomputed for the same
buckets from the per-GPU / per-port rollups just written (8 rows per node and
bucket, not the raw samples), in the caller's transaction: one row per node and
bucket is what long-window heatmaps and pool summaries read. The hourly heatmap tiles
(``ingest_heatmaptile``: per metric, hour and node the twelve 5-minute values) follow in
the same transaction, for the buckets refreshed, from the node rollups just written, and so
do the hourly node tiles (``ingest_nodetile``, ``ingest.node_tiles``: per node, device and
hour every rollup column of the twelve buckets) the node page reads, from the rollups, for
the buckets complete at ``end``.

IB also keeps per-node totals at full resolution (``ingest_ibnodestep``: tx + rx bytes/s
of every port of a node, per scrape step), refreshed for the committed raw range in the
same transaction: alert rules comparing nodes step by step (stragglers, missing data)
read one row per node and step instead of grouping every port's samples.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.db import connection, transaction

from . import node_tiles
from .heatmap_metrics import display_floats, node_rollup_columns, tile_refresh_sql
from .history import gpu_rows, ib_rows
from .partitions import RAW_TABLES, ROLLUP_TABLES, ensure_partitions
from .store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS

BUCKET = timedelta(minutes=5)
#: ``work_mem`` of the rollup refresh statement (``_aggregation_memory``).
REFRESH_WORK_MEM = "64MB"
GPU_SUMS = {"nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery"}
IB_SUMS = {
    "symbol_errors", "link_downed", "link_error_recovery", "rcv_errors",
    "local_link_integrity", "excessive_buffer_overrun",
}  # fmt: skip
IB_MINS = {"state", "phys_state"}


def _aggregate(column: str, sums: set[str]) -> str:
    if column in sums:
        return f"sum({column})"
    if column in IB_MINS:
        return f"min({column})"
    if column == "saturated":
        return "bit_or(saturated)"
    return f"avg({column})"


def _refresh_sql(
    raw: str, rollup: str, keys: tuple[str, ...], values: tuple[str, ...], sums: set[str]
) -> str:
    aggregates = ", ".join(_aggregate(c, sums) for c in values)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in values)
    key_list = ", ".join(keys)
    return (
        f"INSERT INTO {rollup} (ts, {key_list}, {', '.join(values)}) "
        f"SELECT date_bin('5 minutes', ts, 'epoch'::timestamptz) AS bucket, {key_list}, {aggregates} "
        f"FROM {raw} GROUP BY bucket, {key_list} "
        f"ON CONFLICT ({_pk(keys)}) "
        f"DO UPDATE SET {updates}"
    )


def _pk(keys: tuple[str, ...]) -> str:
    return "port_id, ts" if "port_id" in keys else "node_id, gpu, ts"


# Raw rows hot and compacted alike (a backfill older than the hot window refreshes too).
# History decodes only the columns rolled up (not the GPU health columns, which are raw-only);
# the reader's own bounds are the only ts condition: a second one on the decoded ts is
# computed for every step of every history row and makes the planner expect few rows.
GPU_REFRESH = _refresh_sql(
    gpu_rows("%s", "%s", exclusive=True, columns=GPU_VALUE_COLUMNS),
    "ingest_gpurollup",
    ("node_id", "gpu"),
    GPU_VALUE_COLUMNS,
    GPU_SUMS,
)
IB_REFRESH = _refresh_sql(
    ib_rows("%s", "%s", exclusive=True, columns=IB_VALUE_COLUMNS),
    "ingest_ibrollup",
    ("port_id", "node_id"),
    IB_VALUE_COLUMNS,
    IB_SUMS,
)


def _node_refresh_sql(family: str) -> str:
    columns = node_rollup_columns(family)
    names = ", ".join(columns)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns)
    return (
        f"INSERT INTO ingest_noderollup (ts, node_id, {names}) "
        f"SELECT ts, node_id, {', '.join(columns.values())} FROM ingest_{family}rollup "
        f"WHERE ts >= %s AND ts < %s GROUP BY ts, node_id "
        f"ON CONFLICT (ts, node_id) DO UPDATE SET {updates}"
    )


NODE_REFRESH = {"gpu": _node_refresh_sql("gpu"), "ib": _node_refresh_sql("ib")}
TILE_REFRESH = {"gpu": tile_refresh_sql("gpu"), "ib": tile_refresh_sql("ib")}


def bucket_start(moment: datetime) -> datetime:
    """The start of the 5-minute bucket holding ``moment``."""
    epoch_seconds = int(moment.timestamp())
    return moment - timedelta(seconds=epoch_seconds % 300, microseconds=moment.microsecond)


IB_NODE_STEPS = f"""
INSERT INTO ingest_ibnodestep (ts, node_id, bytes)
SELECT ts, node_id, sum(coalesce(tx_bytes, 0) + coalesce(rx_bytes, 0))
FROM {ib_rows("%s", "%s", columns=("tx_bytes", "rx_bytes"))} GROUP BY ts, node_id
ON CONFLICT (ts, node_id) DO UPDATE SET bytes = excluded.bytes
WHERE ingest_ibnodestep.bytes IS DISTINCT FROM excluded.bytes
"""


def refresh_ib_node_steps(start: datetime, end: datetime) -> int:
    """Recompute the per-node IB totals of every step with raw rows in [start, end]."""
    table = next(t for t in RAW_TABLES if t.name == "ingest_ibnodestep")
    ensure_partitions(start, end, (table,))
    with connection.cursor() as cursor:
        cursor.execute(IB_NODE_STEPS, [start, end])
        return cursor.rowcount


def refresh(family: str, start: datetime, end: datetime) -> int:
    """Recompute the rollup buckets touching raw rows in [start, end]; returns rows written."""
    sql = {"gpu": GPU_REFRESH, "ib": IB_REFRESH}.get(family)
    if sql is None:
        return 0
    if family == "ib":
        refresh_ib_node_steps(start, end)
    low, high = bucket_start(start), bucket_start(end) + BUCKET
    ensure_partitions(low, high, ROLLUP_TABLES)
    with connection.cursor() as cursor, _aggregation_memory(cursor):
        cursor.execute(sql, [low, high])
        written = cursor.rowcount
    refresh_nodes(family, low, high)
    refresh_tiles(family, low, high)
    node_tiles.refresh(family, low, high, end)
    return written


@contextmanager
def _aggregation_memory(cursor) -> Iterator[None]:  # noqa: ANN001 - a Django cursor
    """``work_mem`` raised to ``REFRESH_WORK_MEM`` for one statement, then set back.

    At the default 4 MB the planner sorted an hour of 64 nodes' rows from compacted history on
    disk (external merge, ~40 % of the statement); the hot rows' hash table outgrows 4 MB from
    ~100 nodes. Runs in a savepoint: ``set_config(…, true)`` lasts until the transaction ends.
    """
    with transaction.atomic():
        cursor.execute(
            "SELECT current_setting('work_mem'), set_config('work_mem', %s, true)",
            [REFRESH_WORK_MEM],
        )
        previous = cursor.fetchone()[0]
        yield  # on an error the savepoint's rollback restores work_mem (and the statement fails)
        cursor.execute("SELECT set_config('work_mem', %s, true)", [previous])


def refresh_nodes(family: str, low: datetime, high: datetime) -> int:
    """Recompute the per-node rollups of ``family`` for buckets in [low, high) from the rollups."""
    ensure_partitions(low, high, ROLLUP_TABLES)
    with connection.cursor() as cursor:
        cursor.execute(NODE_REFRESH[family], [low, high])
        return cursor.rowcount


def refresh_tiles(family: str, low: datetime, high: datetime) -> int:
    """Recompute the heatmap tile cells of ``family``'s metrics for the node rollup buckets in
    [low, high) (5-minute aligned) from the node rollups; returns the tiles written.

    A tile keeps its other cells, so the node rollups of the rest of its hour must be tiled
    already: every writer of node rollups calls this for the same buckets next (after
    ``refresh_nodes``, which made the partitions).
    """
    params = {"low": low, "high": high}
    params.update(low_epoch=int(low.timestamp()), high_epoch=int(high.timestamp()))
    with connection.cursor() as cursor, display_floats(cursor):
        cursor.execute(TILE_REFRESH[family], params)
        return cursor.rowcount
