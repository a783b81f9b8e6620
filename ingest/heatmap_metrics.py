"""How each heatmap metric becomes one number per node and bucket.

"inner" combines a node's GPUs/ports at one timestamp, "outer" combines the
timestamps of a bucket. The per-node 5-minute rollups (``ingest_noderollup``)
store ``inner`` over the per-GPU / per-port rollups of each 5-minute bucket in
``column``, so a long-window heatmap only applies ``outer``. The SQL builders at
the end turn a metric into the heatmap query ``ingest.selectors.heatmap_rows`` runs.

Heatmaps of 5-minute columns read hourly tiles instead (``ingest_heatmaptile``, refreshed
by ``ingest.rollups`` right after the node rollups): per metric, hour and node the twelve
5-minute values of that hour, so 24 h is ~25 short rows per node rather than 288.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .drift import IDLE_TENSOR_BUCKET
from .history import columns_in, gpu_rows, ib_rows
from .models.choices import Family

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

IB_ERROR_SUM = (
    "coalesce(symbol_errors,0) + coalesce(link_downed,0) + coalesce(link_error_recovery,0) + "
    "coalesce(rcv_errors,0) + coalesce(local_link_integrity,0) + coalesce(excessive_buffer_overrun,0)"
)
NVLINK_ERROR_SUM = (
    "coalesce(nvlink_crc_flit,0) + coalesce(nvlink_crc_data,0) + coalesce(nvlink_replay,0) + "
    "coalesce(nvlink_recovery,0)"
)


@dataclass(frozen=True)
class MetricSpec:
    """How a heatmap metric becomes one number per node and bucket, and what it is called."""

    family: str  # Family.GPU or Family.IB: which table
    inner: str  # SQL aggregate over the node's GPUs/ports at one ts
    outer: str  # SQL aggregate of the inner values over the bucket's timestamps: avg, sum, min, max
    unit: str
    worst: str  # "high" or "low": which end sorts first with sort="worst"
    per_device: str  # SQL expression per GPU/port for rail_matrix (aggregated with ``outer``)
    column: str  # the ingest_noderollup column holding ``inner`` per 5-minute bucket
    label: str  # what pages call it


HEATMAP_METRICS: dict[str, MetricSpec] = {
    # mean utilisation of the node's GPUs, percent
    "gpu_util": MetricSpec(Family.GPU, "avg(util)", "avg", "%", "low", "util", "util",
                           "GPU util (reported)"),
    # mean tensor-core activity of the node's GPUs, ratio 0..1
    "tensor_active": MetricSpec(Family.GPU, "avg(tensor)", "avg", "ratio", "low", "tensor", "tensor",
                                "Tensor active (real)"),
    # mean of (util/100 − tensor) over GPUs: "busy" GPUs whose tensor cores idle (ingest/drift.py)
    "drift": MetricSpec(Family.GPU, "avg(util / 100.0 - tensor)", "avg", "ratio", "high",
                        "util / 100.0 - tensor", "drift", "Drift (util − tensor)"),
    # NVLink bytes/s summed over the node's GPUs
    "nvlink_bw": MetricSpec(Family.GPU, "sum(nvlink_bw)", "avg", "B/s", "low", "nvlink_bw", "nvlink_bw",
                            "NVLink bandwidth"),
    # NVLink error increases (all four counters) summed over GPUs and over the bucket
    "nvlink_errors": MetricSpec(Family.GPU, f"sum({NVLINK_ERROR_SUM})", "sum", "errors", "high",
                                NVLINK_ERROR_SUM, "nvlink_errors", "NVLink errors"),
    # IB transmit / receive bytes/s summed over the node's ports
    "ib_tx": MetricSpec(Family.IB, "sum(tx_bytes)", "avg", "B/s", "low", "tx_bytes", "ib_tx",
                        "IB transmit throughput"),
    "ib_rx": MetricSpec(Family.IB, "sum(rx_bytes)", "avg", "B/s", "low", "rx_bytes", "ib_rx",
                        "IB receive throughput"),
    # xmit_wait ticks/s summed over ports (congestion)
    "ib_xmit_wait": MetricSpec(Family.IB, "sum(xmit_wait)", "avg", "ticks/s", "high", "xmit_wait",
                               "ib_xmit_wait", "IB xmit_wait"),
    # the six IB error counters' increases summed over ports and over the bucket
    "ib_errors": MetricSpec(Family.IB, f"sum({IB_ERROR_SUM})", "sum", "errors", "high", IB_ERROR_SUM,
                            "ib_errors", "IB error increases"),
    # active ports (state 4) of the node; the bucket shows its minimum (a flap shows)
    "ib_state": MetricSpec(Family.IB, "count(*) FILTER (WHERE state = 4)", "min", "ports", "low",
                           "CASE WHEN state = 4 THEN 1 ELSE 0 END", "active_ports", "IB active ports"),
}  # fmt: skip

#: Per-family bookkeeping columns of ``ingest_noderollup`` besides the metric columns.
NODE_COUNTS: dict[str, dict[str, str]] = {
    "gpu": {
        "gpus": "count(*)",
        "util_gpus": "count(util)",
        "tensor_gpus": "count(tensor)",
        # GPUs whose 5-minute means were busy with idle tensor cores (ingest/drift.py)
        "drifted_gpus": f"count(*) FILTER (WHERE {IDLE_TENSOR_BUCKET.predicate()})",
    },
    "ib": {"ports": "count(*)"},
}
#: The column that says a node had data of a family in a bucket.
PRESENCE_COLUMN = {"gpu": "gpus", "ib": "ports"}


def node_rollup_columns(family: str) -> dict[str, str]:
    """``ingest_noderollup`` column → SQL aggregate over one node's rollup rows of one bucket."""
    metrics = {m.column: m.inner for m in HEATMAP_METRICS.values() if m.family == family}
    return {**NODE_COUNTS[family], **metrics}


#: ``extra_float_digits`` while heatmap cells are printed: float8 text then has
#: DBL_DIG (15) − 11 = 4 significant digits (``%g``), plenty for a colour scale and the
#: hover box. Done by Postgres's own float output: no rounding expression per cell, and
#: 1.235e+10 B/s is shorter than 12345678901.
DISPLAY_FLOAT_DIGITS = -11


@contextmanager
def display_floats(cursor: CursorWrapper) -> Iterator[None]:
    """Inside, float8 prints as heatmap cells do (see ``DISPLAY_FLOAT_DIGITS``)."""
    cursor.execute(f"SET extra_float_digits = {DISPLAY_FLOAT_DIGITS}")
    try:
        yield
    except Exception:
        # In a transaction the failure aborted it, and its rollback undoes the SET.
        if cursor.db.get_autocommit():
            cursor.execute("RESET extra_float_digits")
        raise
    cursor.execute("RESET extra_float_digits")  # the connection's next user prints in full


def _cell(expr: str) -> str:
    """One heatmap cell as JSON text: the number (see DISPLAY_FLOAT_DIGITS) or ``null``."""
    return f"coalesce(({expr})::float8::text, 'null')"


#: The column index of a row at ``ts``: whole steps since the window start.
COLUMN_INDEX = "floor((date_part('epoch', ts) - %(start_epoch)s) / %(step)s)::int"


def _columns(cells: str, by_ts: bool = False) -> str:
    # One row per column: node ids and cells as comma-separated text, aggregated from the
    # same rows in the same order, so they pair up by position (no per-cell values in Python).
    # ``cells`` has (j, node_id, v) rows, or with ``by_ts`` (one bucket per column: grouping
    # on the stored ts is cheaper than on a computed index) (ts, node_id, v) rows.
    index, key = (COLUMN_INDEX, "ts") if by_ts else ("j", "j")
    return (
        f"SELECT {index}, string_agg(node_id::text, ','), string_agg({_cell('v')}, ',') "
        f"FROM ({cells}) cells GROUP BY {key}"
    )


_RAW = {"gpu": gpu_rows, "ib": ib_rows}  # hot rows and compacted history alike


def raw_heatmap_sql(spec: MetricSpec) -> str:
    """(column index, node ids, cells) rows of a heatmap from raw samples (see ``_columns``)."""
    per_ts = (
        f"SELECT node_id, {COLUMN_INDEX} AS j, {spec.inner} AS v "
        f"FROM {_RAW[spec.family]('%(start)s', '%(end)s', exclusive=True, columns=columns_in(spec.family, spec.inner))} s "
        f"WHERE ts >= %(start)s AND ts < %(end)s GROUP BY node_id, ts"
    )
    return _columns(f"SELECT j, node_id, {spec.outer}(v) AS v FROM ({per_ts}) p GROUP BY 1, 2")


def node_rollup_heatmap_sql(spec: MetricSpec, aligned: bool) -> str:
    """(column index, node ids, cells) rows of a heatmap from the per-node rollups."""
    # A node rollup row already holds ``inner`` for its 5-minute bucket; only ``outer``
    # over the buckets of a wider column is left (none at all for aligned 5-minute columns).
    where = (
        f"FROM ingest_noderollup WHERE ts >= %(start)s AND ts < %(end)s "
        f"AND {PRESENCE_COLUMN[spec.family]} > 0"
    )
    if aligned:
        return _columns(f"SELECT ts, node_id, {spec.column} AS v {where}", by_ts=True)
    return _columns(
        f"SELECT {COLUMN_INDEX} AS j, node_id, {spec.outer}({spec.column}) AS v {where} GROUP BY 1, 2"
    )


#: A tile's cells: the 5-minute buckets of one hour.
TILE_SLOTS = 12
ALL_SLOTS = (1 << TILE_SLOTS) - 1
_EPOCH = "date_part('epoch', {})::bigint"


def _tile_value(column: str) -> str:
    # Stored as what a cell prints (the refresh runs inside ``display_floats``): the
    # 4-significant-digit decimal read back as float8, which float8's shortest round-trip
    # output prints as that decimal again (float4 would not: 805700000 is a tie between two
    # float4s and prints as 805699970), and faster than the %g a full value needs.
    return f"{column}::text::float8"


def _positional(values: str) -> str:
    # ``values``/``g.slots``: one hour's buckets of a node in slot order. Without holes
    # between the first and last slot (the rule) padding places them; otherwise each slot
    # looks itself up.
    return (
        f"CASE WHEN g.dense THEN array_fill(NULL::float8, ARRAY[g.first]) || {values} "
        f"|| array_fill(NULL::float8, ARRAY[{TILE_SLOTS - 1} - g.last]) "
        f"ELSE ARRAY(SELECT ({values})[array_position(g.slots, i)] "
        f"FROM generate_series(0, {TILE_SLOTS - 1}) i ORDER BY i) END"
    )


def tile_refresh_sql(family: str) -> str:
    """Upsert of the tiles of ``family``'s metrics from the node rollups in [%(low)s, %(high)s).

    Only the slots of that range change in a tile (``low_epoch``/``high_epoch``: the bounds
    as unix seconds, multiples of 300): the rest of the hour is already there, as each node
    rollup refresh refreshes its tiles.
    """
    metrics = {name: m.column for name, m in HEATMAP_METRICS.items() if m.family == family}
    arrays = ", ".join(
        f"array_agg({_tile_value(c)} ORDER BY slot) AS {n}" for n, c in metrics.items()
    )
    rows = ", ".join(f"('{n}', {_positional(f'g.{n}')})" for n in metrics)
    hour = _EPOCH.format("EXCLUDED.hour")
    lo, hi = (
        f"greatest(0, ((%(low_epoch)s - {hour}) / 300)::int)",
        f"least(11, ((%(high_epoch)s - {hour}) / 300)::int - 1)",
    )
    return (
        "INSERT INTO ingest_heatmaptile AS t (metric, hour, node_id, mask, cells) "
        "SELECT m.metric, g.hour, g.node_id, g.mask, m.cells FROM ("
        "SELECT hour, node_id, bit_or(1 << slot)::smallint AS mask, min(slot) AS first, "
        "max(slot) AS last, count(*) = max(slot) - min(slot) + 1 AS dense, "
        f"array_agg(slot ORDER BY slot) AS slots, {arrays} FROM ("
        "SELECT date_bin('1 hour', ts, 'epoch') AS hour, node_id, "
        f"mod({_EPOCH.format('ts')}, 3600)::int / 300 AS slot, {', '.join(metrics.values())} "
        f"FROM ingest_noderollup WHERE ts >= %(low)s AND ts < %(high)s "
        f"AND {PRESENCE_COLUMN[family]} > 0) r GROUP BY hour, node_id) g "
        f"CROSS JOIN LATERAL (VALUES {rows}) m(metric, cells) "
        "ON CONFLICT (metric, hour, node_id) DO UPDATE SET "
        f"cells[{lo} + 1 : {hi} + 1] = EXCLUDED.cells[{lo} + 1 : {hi} + 1], "
        f"mask = t.mask & ~(((1 << ({hi} - {lo} + 1)) - 1) << {lo}) | EXCLUDED.mask"
    )


def tile_params(metric: str, first: datetime, columns: int) -> dict[str, object]:
    """The parameters of ``tile_heatmap_sql``: ``columns`` 5-minute columns from ``first``."""
    start = int(first.timestamp())
    end = start + 300 * (columns - 1)  # the last column
    first_hour, last_hour = start - start % 3600, end - end % 3600
    lo, hi = (start - first_hour) // 300, (end - last_hour) // 300  # their slots in the edge tiles
    return {
        "metric": metric,
        "start_epoch": start,
        "last": columns - 1,
        "first_hour": datetime.fromtimestamp(first_hour, UTC),
        "last_hour": datetime.fromtimestamp(last_hour, UTC),
        "hours": [datetime.fromtimestamp(h, UTC) for h in range(first_hour, last_hour + 1, 3600)],
        "first_lo": lo + 1,  # 1-based slice bounds
        "last_hi": hi + 1,
        "first_bits": ALL_SLOTS & ~((1 << lo) - 1),
        "last_bits": (1 << (hi + 1)) - 1,
    }


def _window_cells(cells: str, hour: str) -> str:
    # The window's part of the tile of ``hour`` as JSON array items: the whole tile but in
    # the first and last hour of a window that does not start or end on the hour.
    lo = f"CASE WHEN {hour} = %(first_hour)s THEN %(first_lo)s ELSE 1 END"
    hi = f"CASE WHEN {hour} = %(last_hour)s THEN %(last_hi)s ELSE {TILE_SLOTS} END"
    part = (
        f"CASE WHEN {hour} > %(first_hour)s AND {hour} < %(last_hour)s THEN {cells} "
        f"ELSE ({cells})[{lo} : {hi}] END"
    )
    return f"array_to_string({part}, ',', 'null')"


#: Bits of a tile's ``mask`` inside the window.
_WINDOW_BITS = (
    "mask & CASE WHEN hour = %(first_hour)s THEN %(first_bits)s ELSE 4095 END "
    "& CASE WHEN hour = %(last_hour)s THEN %(last_bits)s ELSE 4095 END"
)
_COLUMN = "(date_part('epoch', {})::bigint - %(start_epoch)s) / 300"  # window column of an hour
#: A node whose tiles leave out whole hours inside its span: its tiles looked up hour by hour.
_HOLED_ROW = (
    "(SELECT '[' || string_agg("
    + _window_cells("coalesce(x.cells, array_fill(NULL::float8, ARRAY[12]))", "h.hour")
    + ", ',' ORDER BY h.hour) || ']' FROM unnest(%(hours)s::timestamptz[]) h(hour) "
    "LEFT JOIN ingest_heatmaptile x "
    "ON x.metric = %(metric)s AND x.hour = h.hour AND x.node_id = g.node_id)"
)


def tile_heatmap_sql(spec: MetricSpec, sort: str) -> str:
    """(node name, JSON array text) per node with data in the window, in ``sort`` order.

    From the tiles, with the parameters of ``tile_params``. Cells print as float8's
    shortest round trip: the 4-significant-digit decimals the tiles hold.
    """
    nodes = (
        "SELECT node_id, count(*) AS hours, min(hour) AS first, max(hour) AS last, "
        f"string_agg({_window_cells('cells', 'hour')}, ',' ORDER BY hour) AS body "
        "FROM ingest_heatmaptile WHERE metric = %(metric)s "
        "AND hour >= %(first_hour)s AND hour <= %(last_hour)s "
        f"GROUP BY node_id HAVING bit_or({_WINDOW_BITS}) <> 0"
    )
    lead = f"greatest(0, {_COLUMN.format('g.first')})"
    trail = f"%(last)s - least(%(last)s, {_COLUMN.format('g.last')} + {TILE_SLOTS - 1})"
    row = (
        "CASE WHEN g.hours = date_part('epoch', g.last - g.first)::int / 3600 + 1 "
        f"THEN '[' || repeat('null,', {lead}::int) || g.body || repeat(',null', {trail}::int) || ']' "
        f"ELSE {_HOLED_ROW} END"
    )
    return (
        f"SELECT name, cells_json FROM (SELECT n.name, n.leaf_switch, {row} AS cells_json "
        f"FROM ({nodes}) g JOIN ingest_node n ON n.id = g.node_id) r ORDER BY {_tile_order(spec, sort)}"
    )


def _tile_order(spec: MetricSpec, sort: str) -> str:
    # As ``ingest.selectors.heatmaps._sorted_nodes``: code-point order of names (COLLATE "C"); worst:
    # the mean of the printed cells (summed in column order, like Python's ``sum``).
    name = 'name COLLATE "C"'
    if sort == "topology":
        return f"coalesce(nullif(leaf_switch, ''), '~') COLLATE \"C\", {name}"
    if sort == "worst":
        sign = -1 if spec.worst == "high" else 1
        mean = "(SELECT avg(e::float8) FROM json_array_elements_text(cells_json::json) e)"
        return f"{sign} * {mean} NULLS LAST, {name}"
    return name
