"""Compacted history: raw GPU and IB samples older than the hot window, one row per device and hour.

Hot rows (``ingest_gpusample``, ``ingest_ibsample``: one row per device and step, what
ingest writes and the live pages and alert rules read) are moved by ``ingest.compaction``
into ``ingest_gpuhistory`` / ``ingest_ibhistory``: one row per (node, GPU) or port and
hour, each metric an array on the step grid (``step`` seconds from ``hour``; timestamps
are implied), in the narrowest type that keeps the metric's precision (``ENCODINGS``,
also in docs/scaling.md), compressed with lz4 where Postgres TOASTs the row. ``slots`` is
NULL when every step of the hour is present, else the step numbers present (the arrays
then hold those steps only).

Readers never pick a layout: ``ingest_gpu_rows(lo, hi[, marks[, columns]])`` and
``ingest_ib_rows(…)`` (SQL functions made by migration 0014, inlined by the planner)
return every sample with ``lo <= ts <= hi`` from both, with the hot tables' columns and
types; ``gpu_rows`` / ``ib_rows`` write the call. ``columns`` (a bit mask) names the value
columns history decodes (the others read as NULL there); ``marks`` skips history
rows without a step matching one of the hot tables' partial-index predicates (``MARKS``):
what those indexes do for hot rows, for a reader whose predicate implies the mark's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

HOUR_SECONDS = 3600
#: SQL: the time of the last step a history row ``h`` can hold.
LAST_STEP = f"h.hour + make_interval(secs => {HOUR_SECONDS} - h.step)"


@dataclass(frozen=True)
class Encoding:
    """How one metric is kept in history: element type and scale (stored = round(value × scale)).

    ``scale`` 0: a float type, stored as cast. ``hot_type``: the hot column's type, which
    readers get back. A row with a value the encoding cannot hold (out of range, or a
    non-integer in an exact integer column) is not compacted: it stays a hot row.
    """

    column: str
    element: str
    scale: int
    precision: str
    hot_type: str = "float8"

    @property
    def exact_integer(self) -> bool:
        return self.scale == 1

    def encode(self, value: str) -> str:
        """SQL: the stored element for ``value`` (a hot column expression)."""
        if self.scale == 0:
            return f"({value})::{self.element}"
        if self.scale == 1:
            return f"({value})::{self.element}"
        return f"round(({value}) * {self.scale})::{self.element}"

    def decode(self, element: str) -> str:
        """SQL: the hot-table value of a stored ``element``."""
        if self.hot_type != "float8":
            return element
        if self.scale > 1:
            return f"({element}) / {self.scale}::float8"
        return f"({element})::float8"

    def fits(self, value: str) -> str:
        """SQL: whether ``value`` (not NULL) is held by this encoding within its precision."""
        limit = {"smallint": 32767, "integer": 2147483647}.get(self.element)
        if self.hot_type != "float8":
            return "true"
        if limit is None:
            return "true" if self.element == "double precision" else f"abs({value}) <= 3.4e38"
        if self.exact_integer:
            return f"({value} = round({value}) AND abs({value}) <= {limit})"
        return f"abs(round(({value}) * {self.scale})) <= {limit}"


_EXACT_INT = "exact (integer)"
_RATIO = "1e-6 absolute: exact for dcgm-exporter, which prints 6 decimals"
_FLOAT4 = "float4: relative error ≤ 2⁻²⁴ ≈ 6e-8"
_AS_HOT = "exact: float4 in the hot rows as well"
GPU_ENCODINGS = (
    Encoding("util", "smallint", 1, "exact: DCGM reports integer percent"),
    Encoding("tensor", "integer", 1_000_000, _RATIO),
    Encoding("sm", "integer", 1_000_000, _RATIO),
    Encoding("dram", "integer", 1_000_000, _RATIO),
    Encoding("power", "integer", 1000, "1 mW (±0.5 mW): NVML's resolution, exact for it"),
    Encoding("temp", "smallint", 1, "exact: DCGM reports integer °C"),
    Encoding("nvlink_bw", "real", 0, _FLOAT4),
    Encoding("nvlink_crc_flit", "integer", 1, _EXACT_INT),
    Encoding("nvlink_crc_data", "integer", 1, _EXACT_INT),
    Encoding("nvlink_replay", "integer", 1, _EXACT_INT),
    Encoding("nvlink_recovery", "integer", 1, _EXACT_INT),
    # Hardware health (ingest 0012): float4 in the hot rows too, kept as they are.
    Encoding("ecc_dbe_vol", "real", 0, _AS_HOT, "real"),
    Encoding("pcie_replay", "real", 0, _AS_HOT, "real"),
    Encoding("row_remap_failure", "real", 0, _AS_HOT, "real"),
    Encoding("row_remap_pending", "real", 0, _AS_HOT, "real"),
    Encoding("clock_events", "real", 0, _AS_HOT, "real"),
)
IB_ENCODINGS = (
    Encoding("tx_bytes", "real", 0, _FLOAT4),
    Encoding("rx_bytes", "real", 0, _FLOAT4),
    Encoding("tx_packets", "real", 0, _FLOAT4),
    Encoding("rx_packets", "real", 0, _FLOAT4),
    Encoding("xmit_wait", "real", 0, _FLOAT4),
    Encoding("symbol_errors", "integer", 1, _EXACT_INT),
    Encoding("link_downed", "integer", 1, _EXACT_INT),
    Encoding("link_error_recovery", "integer", 1, _EXACT_INT),
    Encoding("rcv_errors", "integer", 1, _EXACT_INT),
    Encoding("local_link_integrity", "integer", 1, _EXACT_INT),
    Encoding("excessive_buffer_overrun", "integer", 1, _EXACT_INT),
    Encoding("rate", "double precision", 0, "exact (float8; constant per port, lz4 folds it)"),
    Encoding("state", "smallint", 1, "exact", "smallint"),
    Encoding("phys_state", "smallint", 1, "exact", "smallint"),
    Encoding("saturated", "smallint", 1, "exact", "smallint"),
)


@dataclass(frozen=True)
class HistoryTable:
    """A hot table, its compacted history table, their keys and the reader function."""

    family: str
    hot: str
    history: str
    function: str
    keys: tuple[tuple[str, str], ...]  # (column, type) besides ts, in hot column order
    encodings: tuple[Encoding, ...]
    #: mark name → (bit, predicate over hot columns): the hot table's partial indexes (0006, 0011).
    marks: dict[str, tuple[int, str]]

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.keys)

    @property
    def group_key(self) -> tuple[str, ...]:
        """The device key of a history row (IB: the port; node_id is carried along)."""
        return ("port_id",) if self.family == "ib" else ("node_id", "gpu")

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(e.column for e in self.encodings)


GPU_HISTORY = HistoryTable(
    "gpu", "ingest_gpusample", "ingest_gpuhistory", "ingest_gpu_rows",
    (("node_id", "integer"), ("gpu", "smallint")), GPU_ENCODINGS,
    {"drift": (1, "util >= 90 AND tensor <= 0.05"),
     "nvlink": (2, "nvlink_crc_flit > 0 OR nvlink_crc_data > 0")},
)  # fmt: skip
IB_HISTORY = HistoryTable(
    "ib", "ingest_ibsample", "ingest_ibhistory", "ingest_ib_rows",
    (("port_id", "integer"), ("node_id", "integer")), IB_ENCODINGS,
    {"errors": (1, "symbol_errors > 0 OR rcv_errors > 0 OR local_link_integrity > 0"
                   " OR excessive_buffer_overrun > 0 OR link_downed > 0"
                   " OR link_error_recovery > 0 OR state <> 4"),
     "wait": (2, "saturated <> 0 OR xmit_wait >= 0.000625 * rate")},
)  # fmt: skip
HISTORIES = {"gpu": GPU_HISTORY, "ib": IB_HISTORY}


def gpu_rows(
    lo: str,
    hi: str,
    mark: str | None = None,
    *,
    exclusive: bool = False,
    columns: Iterable[str] | None = None,
) -> str:
    """SQL FROM item: every GPU sample with ``lo <= ts <= hi`` (SQL expressions), hot or compacted.

    ``exclusive``: ``ts < hi`` (saves decoding the hour starting at ``hi``). ``mark``:
    history rows without a step matching that mark's predicate are skipped (the caller's
    own predicate must imply it). ``columns``: the value columns the caller reads (default
    all); history decodes only those, the others read as NULL.
    """
    return _call(GPU_HISTORY, lo, hi, mark, exclusive, columns)


def ib_rows(
    lo: str,
    hi: str,
    mark: str | None = None,
    *,
    exclusive: bool = False,
    columns: Iterable[str] | None = None,
) -> str:
    """SQL FROM item: every IB port sample with ``lo <= ts <= hi``, hot or compacted (see gpu_rows)."""
    return _call(IB_HISTORY, lo, hi, mark, exclusive, columns)


def columns_in(family: str, *sql: str) -> tuple[str, ...]:
    """The value columns of ``family`` that the SQL texts name (for ``columns=``)."""
    text = " ".join(sql)
    return tuple(c for c in HISTORIES[family].columns if re.search(rf"\b{c}\b", text))


def _call(
    table: HistoryTable,
    lo: str,
    hi: str,
    mark: str | None,
    exclusive: bool,
    columns: Iterable[str] | None,
) -> str:
    bits = table.marks[mark][0] if mark else 0
    end = f"({hi})::timestamptz - interval '1 microsecond'" if exclusive else hi
    wanted = set(table.columns if columns is None else columns)
    unknown = wanted - set(table.columns)
    if unknown:
        raise ValueError(f"not columns of {table.hot}: {sorted(unknown)}")
    mask = sum(1 << i for i, c in enumerate(table.columns) if c in wanted)
    return f"{table.function}({lo}, {end}, {bits}, {mask})"


def decoded_rows_sql(table: HistoryTable, source: str, where: str, mask: str = "") -> str:
    """SQL: the hot-layout rows (ts, keys, values, then hour) held by history rows ``h`` of ``source``.

    Every array is unnested in the select list, in lockstep (an array that is NULL reads as
    NULLs; ``slots`` NULL means step ``i``): one pass over each array, several times cheaper than a
    multi-array ``unnest`` in FROM (which materialises) or subscripts (which decompress
    the array once per element). ``where`` filters history rows before they are unnested;
    ``mask`` (SQL, bit i: column i) leaves the other arrays undecoded (a constant mask folds
    to the array or NULL when the planner inlines the reader).
    """
    arrays = ", ".join(
        f"unnest(CASE WHEN ({mask}) & {1 << i} <> 0 THEN h.{e.column} END) AS {e.column}"
        if mask
        else f"unnest(h.{e.column}) AS {e.column}"
        for i, e in enumerate(table.encodings)
    )
    values = ", ".join(f"{e.decode('x.' + e.column)} AS {e.column}" for e in table.encodings)
    keys = ", ".join(f"x.{k}" for k in table.key_columns)
    steps = f"generate_series(0, coalesce(cardinality(h.slots), {HOUR_SECONDS} / h.step) - 1)"
    return (
        f"SELECT x.hour + make_interval(secs => x.step * coalesce(x.slot, x.i)) AS ts, {keys}, {values}, "
        f"x.hour FROM (SELECT h.hour, h.step, {', '.join('h.' + k for k in table.key_columns)}, "
        f"{steps} AS i, unnest(h.slots) AS slot, {arrays} FROM {source} WHERE {where}) x"
    )


def function_sql(table: HistoryTable, encoded: str = "") -> str:
    """CREATE FUNCTION of the reader: hot rows UNION ALL decoded history, ``$1 <= ts <= $2``.

    Plain SQL, STABLE, one SELECT: the planner inlines it, so the caller's own conditions
    (ts bounds, node, GPU, value predicates) reach both layouts and the hot partial indexes,
    and the bounds prune partitions of both tables. History is read in two branches, chosen
    per history row before any array is unnested: the hours whose every step lies inside
    the bounds (``whole``: no per-step test, and a caller that does not read ``ts`` never
    computes it), and the at most two hours per device that straddle a bound (``edge``: each
    decoded step tested). PARALLEL UNSAFE on purpose: a parallel plan counts the history
    branch before its arrays are unnested (120× too few rows) and picks nested loops over
    it; run serially, its estimate is right. ``encoded``: SQL of the family's encoded hot rows
    in the hot columns, bounded by ``$1``/``$2`` and honouring ``$3``/``$4`` as history does
    (``ingest.hot_layouts.EncodedHot.reader_sql``; migrations 0018, 0019).
    """
    hot_columns = ("ts", *table.key_columns, *table.columns)
    types = dict(table.keys) | {e.column: e.hot_type for e in table.encodings}
    returns = ", ".join(f"{c} {'timestamptz' if c == 'ts' else types[c]}" for c in hot_columns)
    # An hour's steps are hour + step × i, i < 3600 / step: its last step is 3600 − step in.
    # (``h.hour <= $2`` in both: the partition bound the planner prunes on.)
    whole = f"h.hour >= $1 AND h.hour <= $2 AND {LAST_STEP} <= $2"
    marked = "($3 = 0 OR h.marks & $3 = $3)"
    history = {
        "whole": decoded_rows_sql(table, f"{table.history} h", f"{whole} AND {marked}", "$4"),
        "edge": decoded_rows_sql(
            table,
            f"{table.history} h",
            f"h.hour >= date_bin('1 hour', $1, 'epoch') AND h.hour <= $2 AND NOT ({whole}) "
            f"AND {marked}",
            "$4",
        ),
    }
    selected = ", ".join("d." + c for c in hot_columns)
    return (
        f"CREATE OR REPLACE FUNCTION {table.function}"
        "(timestamptz, timestamptz, integer DEFAULT 0, integer DEFAULT -1) "
        f"RETURNS TABLE ({returns}) LANGUAGE sql STABLE PARALLEL UNSAFE AS $fn$ "
        f"SELECT {', '.join(hot_columns)} FROM {table.hot} WHERE ts >= $1 AND ts <= $2 UNION ALL "
        + (f"SELECT {', '.join(hot_columns)} FROM ({encoded}) enc UNION ALL " if encoded else "")
        + f"SELECT {selected} FROM ({history['whole']}) d UNION ALL "
        f"SELECT {selected} FROM ({history['edge']}) d WHERE d.ts >= $1 AND d.ts <= $2 $fn$;"
    )


def table_sql(table: HistoryTable) -> str:
    """CREATE TABLE of a history table: partitioned by day on ``hour`` like the hot table.

    Arrays are STORAGE MAIN with lz4; partitions are made with the TOAST target at its
    minimum (``ingest.partitions.HISTORY_TABLES``), so a row over the TOAST threshold (~2 kB) has
    every array compressed and kept inline.
    """
    keys = ", ".join(f"{name} {kind} NOT NULL" for name, kind in table.keys)
    arrays = ("slots", *table.columns)
    types = ["smallint", *(e.element for e in table.encodings)]
    columns = ", ".join(f"{c} {t}[] COMPRESSION lz4" for c, t in zip(arrays, types, strict=True))
    storage = ", ".join(f"ALTER COLUMN {c} SET STORAGE MAIN" for c in arrays)
    # IB readers select a node's ports by node_id (the hot table joins ingest_ibport instead).
    by_node = (
        f"CREATE INDEX {table.history}_node_hour ON {table.history} (node_id, hour);"
        if table.family == "ib"
        else ""
    )
    return (
        f"CREATE TABLE {table.history} (hour timestamptz NOT NULL, {keys}, "
        f"step smallint NOT NULL, marks smallint NOT NULL DEFAULT 0, {columns}, "
        f"PRIMARY KEY ({', '.join(table.group_key)}, hour)) PARTITION BY RANGE (hour); "
        f"ALTER TABLE {table.history} {storage};{by_node}"
    )


def on_grid_sql(step: int, ts: str = "ts") -> str:
    """SQL predicate: ``ts`` lies in the hour ``%(hour)s`` … ``%(next)s`` on the step grid."""
    return (
        f"{ts} >= %(hour)s AND {ts} < %(next)s AND {ts} = date_bin('{step} seconds', {ts}, 'epoch')"
    )


def mark_indexes_sql(table: HistoryTable, name: str) -> str:
    """CREATE INDEX on ``name`` (an encoded hot table with a ``marks`` column) per mark of
    ``table``, and a BRIN on ts: the partial indexes the hot per-device rows have."""
    return f"CREATE INDEX {name}_ts_brin ON {name} USING brin (ts);" + "".join(
        f"CREATE INDEX {name}_{mark}_ts ON {name} (ts) WHERE (marks & {bit}) = {bit};"
        for mark, (bit, _) in table.marks.items()
    )


def compactable_sql(table: HistoryTable, step: int) -> str:
    """SQL predicate over hot columns: the row sits on the step grid and every value fits."""
    fits = " AND ".join(
        f"({e.column} IS NULL OR {e.fits(e.column)})"
        for e in table.encodings
        if e.fits(e.column) != "true"
    )
    values = ", ".join(table.columns)  # a row with no value would read back as no row
    return f"ts = date_bin('{step} seconds', ts, 'epoch') AND num_nonnulls({values}) > 0 AND {fits}"


def move_sql(table: HistoryTable, step: int, also: tuple[str, str] = ("", "")) -> str:
    """SQL moving the compactable hot rows of one hour (``%(hour)s``, ``%(next)s``) into history.

    One statement: the DELETE's rows are grouped into one history row per device; the
    values are rounded through their encoding first, so the marks judge what readers get.
    ``also``: (more CTEs, a SELECT of the hot-layout rows they delete): the encoded hot rows.
    """
    keys = ", ".join(table.key_columns)
    hot_columns = ", ".join(table.columns)
    rounded = ", ".join(f"{e.decode(e.encode(e.column))} AS {e.column}" for e in table.encodings)
    arrays = ", ".join(
        f"CASE WHEN count({e.column}) = 0 THEN NULL "
        f"ELSE array_agg({e.encode(e.column)} ORDER BY slot) END"
        for e in table.encodings
    )
    marks = marks_sql(table, aggregate=True)
    return (
        f"WITH moved AS (DELETE FROM {table.hot} WHERE ts >= %(hour)s AND ts < %(next)s "
        f"AND {compactable_sql(table, step)} RETURNING ts, {keys}, {hot_columns}){also[0]}, "
        f"rounded AS (SELECT (extract(epoch FROM ts - %(hour)s)::int / {step})::smallint AS slot, "
        f"{keys}, {rounded} FROM (SELECT ts, {keys}, {hot_columns} FROM moved"
        + (f" UNION ALL SELECT ts, {keys}, {hot_columns} FROM ({also[1]}) a" if also[1] else "")
        + ") m) "
        f"INSERT INTO {table.history} (hour, {keys}, step, marks, slots, {hot_columns}) "
        f"SELECT %(hour)s, {keys}, {step}, ({marks})::smallint, "
        f"CASE WHEN count(*) = {HOUR_SECONDS // step} THEN NULL ELSE array_agg(slot ORDER BY slot) END, "
        f"{arrays} FROM rounded GROUP BY {keys}"
    )


def marks_sql(table: HistoryTable, *, aggregate: bool) -> str:
    """SQL: the mark bits (``table.marks``) of a row, or OR-ed over a group's rows."""
    test = "bool_or(coalesce({}, false))" if aggregate else "coalesce({}, false)"
    return " | ".join(
        f"(CASE WHEN {test.format(predicate)} THEN {bit} ELSE 0 END)"
        for bit, predicate in table.marks.values()
    )


def count_sql(table: HistoryTable, step: int, also: str = "") -> str:
    """SQL: (rows, compactable rows) of the hot table in one hour; ``also``: more hot-layout
    rows of the hour (the encoded hot rows), every one compactable."""
    hot = (
        f"SELECT count(*) AS n, count(*) FILTER (WHERE {compactable_sql(table, step)}) AS c "
        f"FROM {table.hot} WHERE ts >= %(hour)s AND ts < %(next)s"
    )
    if also:
        hot += f" UNION ALL SELECT count(*), count(*) FROM ({also}) a"
    return f"SELECT sum(n)::bigint, sum(c)::bigint FROM ({hot}) counts"


def reopen_sql(table: HistoryTable, step: int, also: str = "") -> str:
    """SQL putting back into the hot table the history rows of one hour that new hot rows of
    the same devices arrived for (late data), so the next ``move_sql`` merges them.

    A step present in both keeps the hot row (the later write). ``also``: more hot-layout
    rows of the hour (the encoded hot rows) whose devices are reopened too.
    """
    hot_columns = ", ".join(("ts", *table.key_columns, *table.columns))
    join = " AND ".join(f"h.{k} = k.{k}" for k in table.group_key)
    device = ", ".join(table.group_key)
    more = f" UNION SELECT {device} FROM ({also}) a" if also else ""
    return (
        f"WITH k AS (SELECT DISTINCT {device} FROM {table.hot} "
        f"WHERE ts >= %(hour)s AND ts < %(next)s AND {compactable_sql(table, step)}{more}), "
        f"old AS (DELETE FROM {table.history} h USING k WHERE h.hour = %(hour)s AND {join} "
        f"RETURNING h.*) "
        f"INSERT INTO {table.hot} ({hot_columns}) SELECT {hot_columns} "
        f"FROM ({decoded_rows_sql(table, 'old h', 'true')}) d ON CONFLICT DO NOTHING"
    )


def present_in_history_sql(table: HistoryTable, stage: str) -> str:
    """SQL deleting from ``stage`` (hot-layout rows about to be written) the steps that
    compacted history already holds: a re-ingested old window is stored once."""
    join = " AND ".join(f"h.{k} = s.{k}" for k in table.group_key)
    slot = "extract(epoch FROM s.ts - h.hour)::int / h.step"
    return (
        f"DELETE FROM {stage} s USING {table.history} h "
        f"WHERE {join} AND h.hour = date_bin('1 hour', s.ts, 'epoch') "
        f"AND s.ts = date_bin(make_interval(secs => h.step), s.ts, h.hour) "
        f"AND (CASE WHEN h.slots IS NULL THEN true ELSE ({slot})::smallint = ANY(h.slots) END)"
    )
