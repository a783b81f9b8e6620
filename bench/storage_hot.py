"""bench_storage, part 1: where the hot rows' bytes go, and hot layouts tried on the same rows.

``breakdown`` splits each hot table's bytes per row into tuple header (with the NULL
bitmap and alignment padding), line pointer, keys, values, page slack and each index
(with the primary key's leaf density, from ``pgstattuple`` where the extension exists).
``alternatives`` rewrites the same rows into scratch tables in the order live ingest
writes them (one step of every device after the other), so each layout's primary key
grows as it would in production: today's layout, the value columns narrowed to
compacted history's encodings, the same with a time-leading primary key, and one GPU
row per node and step.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from ingest import gpu_steps, ib_encoded
from ingest.compaction import ENCODED
from ingest.history import GPU_HISTORY, IB_HISTORY, HistoryTable
from ingest.store import GPU_HEALTH_COLUMNS, GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS

#: Values of each family (``saturated`` is a flag, not a sample).
SAMPLE_COLUMNS = {
    "gpu": (*GPU_VALUE_COLUMNS, *GPU_HEALTH_COLUMNS),
    "ib": tuple(c for c in IB_VALUE_COLUMNS if c != "saturated"),
}


def _sql(sql: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchall() if cursor.description else []


def _samples(table: str, family: str) -> int:
    return int(_sql(f"SELECT coalesce(sum(num_nonnulls({', '.join(SAMPLE_COLUMNS[family])})), 0) FROM {table}")[0][0])  # fmt: skip


def source(table: HistoryTable) -> str:
    """Every hot row of ``table`` in the per-device layout (GPU: per-GPU rows and split step rows)."""
    return ENCODED[table.family].view


def _partitions(parent: str) -> list[str]:
    return [
        r[0]
        for r in _sql(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            f"JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = '{parent}' AND c.reltuples > 0"
        )
    ]


def _leaf_density(index: str) -> float | None:
    """avg_leaf_density (%) of a btree index, None without pgstattuple."""
    try:
        return float(_sql(f"SELECT avg_leaf_density FROM pgstatindex('{index}')")[0][0])
    except Exception:  # noqa: BLE001 - the extension is optional
        return None


def breakdown(table: HistoryTable) -> list[str]:
    """Markdown rows: bytes per hot row of ``table``, by where they go, and per sample."""
    try:
        _sql("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    except Exception:  # noqa: BLE001, S110 - not installed: densities are left out
        pass
    keys = ("ts", *table.key_columns)
    values = SAMPLE_COLUMNS[table.family] + (("saturated",) if table.family == "ib" else ())
    width = lambda cols: " + ".join(f"coalesce(pg_column_size({c}), 0)" for c in cols)  # noqa: E731
    rows, tuple_bytes, key_bytes, value_bytes, nulls = _sql(
        f"SELECT count(*), sum(pg_column_size(s.*)), sum({width(keys)}), sum({width(values)}), "
        f"sum(num_nulls({', '.join(values)})) FROM {table.hot} s"
    )[0]
    if not int(rows):  # GPU samples are step rows now: the per-GPU table may hold none
        return [f"| {table.hot}: no rows | 0 | 0 |"]
    samples = _samples(table.hot, table.family)
    heap = indexes = primary = 0
    densities = []
    for part in _partitions(table.hot):
        heap += int(_sql(f"SELECT pg_table_size('{part}')")[0][0])
        for index, size, is_primary in _sql(
            "SELECT i.indexrelid::regclass::text, pg_relation_size(i.indexrelid), i.indisprimary "
            f"FROM pg_index i WHERE i.indrelid = '{part}'::regclass"
        ):
            indexes += size
            if is_primary:
                primary += size
                densities.append(_leaf_density(index))
    rows, tuple_bytes = int(rows), int(tuple_bytes)
    header = tuple_bytes - int(key_bytes) - int(value_bytes)
    slack = heap - tuple_bytes - 4 * rows
    density = "" if None in densities or not densities else f", leaf density {sum(densities) / len(densities):.0f} %"  # fmt: skip
    parts = [
        ("tuple header + NULL bitmap + alignment", header),
        ("line pointer", 4 * rows),
        (f"keys ({', '.join(keys)})", int(key_bytes)),
        (f"values ({samples / rows:.1f} per row, {int(nulls) / rows:.1f} NULL)", int(value_bytes)),
        ("page slack (headers, free space, FSM/VM)", slack),
        (f"primary key{density}", primary),
        ("other indexes (BRIN on ts, partial alert indexes)", indexes - primary),
    ]
    lines = [
        f"| {table.hot}: {name} | {size / rows:.1f} | {size / samples:.2f} |"
        for name, size in parts
    ]
    total = heap + indexes
    lines.append(f"| **{table.hot} total** | **{total / rows:.1f}** | **{total / samples:.2f}** |")
    return lines


@dataclass(frozen=True)
class Layout:
    """A hot layout tried: one CREATE + INSERT per family, on the hot rows."""

    name: str
    narrow: bool
    key_first: str  # "device" (today's key order) or "ts"
    gpu_per_node: bool = False


LAYOUTS = (
    Layout("today's layout, rows written step by step as live ingest does", False, "device"),
    Layout("values in compacted history's encodings (smallint / integer × scale / real)", True, "device"),
    Layout("the same, primary key (ts, device) with fillfactor 100", True, "ts"),
    Layout("the same encodings, one GPU row per node and step (a column per GPU and metric)", True, "device", True),
)  # fmt: skip


def _types(table: HistoryTable, narrow: bool) -> list[tuple[str, str, str]]:
    """(column, type, expression over the hot row) of each value column."""
    out = []
    for e in table.encodings:
        if narrow:
            out.append((e.column, e.element, e.encode(e.column)))
        else:
            out.append((e.column, e.hot_type, e.column))
    return out


def _create(table: HistoryTable, layout: Layout, name: str) -> None:
    keys = list(table.keys)
    columns = _types(table, layout.narrow)
    if table.family == "gpu" and layout.gpu_per_node:
        gpus = int(_sql(f"SELECT coalesce(max(gpu), 0) + 1 FROM {source(table)}")[0][0])
        per_gpu = [(f"{c}_{g}", t, f"max({x}) FILTER (WHERE gpu = {g})") for g in range(gpus) for c, t, x in columns]  # fmt: skip
        body = ", ".join(f"{c} {t}" for c, t, _ in per_gpu)
        pk = "node_id, ts" if layout.key_first == "device" else "ts, node_id"
        _sql(f"CREATE TABLE {name} (ts timestamptz NOT NULL, node_id integer NOT NULL, {body}, PRIMARY KEY ({pk}))")  # fmt: skip
        _sql(f"INSERT INTO {name} SELECT ts, node_id, {', '.join(x for *_, x in per_gpu)} "
             f"FROM {source(table)} GROUP BY ts, node_id ORDER BY ts, node_id")  # fmt: skip
        return
    device = ", ".join(table.group_key)
    pk = f"{device}, ts" if layout.key_first == "device" else f"ts, {device}"
    options = " WITH (fillfactor = 100)" if layout.key_first == "ts" else ""
    body = ", ".join(f"{k} {t} NOT NULL" for k, t in keys) + ", " + ", ".join(f"{c} {t}" for c, t, _ in columns)  # fmt: skip
    _sql(f"CREATE TABLE {name} (ts timestamptz NOT NULL, {body}, PRIMARY KEY ({pk}){options})")
    _sql(f"INSERT INTO {name} SELECT ts, {', '.join(k for k, _ in keys)}, {', '.join(x for *_, x in columns)} "
         f"FROM {source(table)} ORDER BY ts, {device}")  # fmt: skip


def alternatives() -> list[tuple[str, int, int]]:
    """(layout, GPU bytes, IB bytes) of each layout in ``LAYOUTS``, heap + TOAST + indexes."""
    measured = []
    for layout in LAYOUTS:
        sizes = []
        for table in (GPU_HISTORY, IB_HISTORY):
            name = f"alt_hot_{table.family}"
            _sql(f"DROP TABLE IF EXISTS {name}")
            _create(table, layout, name)
            _sql(f"VACUUM ANALYZE {name}")
            sizes.append(int(_sql(f"SELECT pg_total_relation_size('{name}')")[0][0]))
            _sql(f"DROP TABLE {name}")
        measured.append((layout.name, sizes[0], sizes[1]))
    return measured


def samples_by_family() -> tuple[int, int]:
    """(GPU samples, IB samples) of the hot rows."""
    return _samples(source(GPU_HISTORY), "gpu"), _samples(source(IB_HISTORY), "ib")


def encoded_breakdown(family: str) -> list[str]:
    """Markdown rows: bytes per row of a family's encoded hot table and per sample, by part."""
    if family == "gpu":
        table, cells, keys = gpu_steps.TABLE, gpu_steps.cells(), "ts, node_id, slot, present, marks"
        primary_key = "node_id, slot, ts"
    else:
        table, cells, keys = (
            ib_encoded.TABLE,
            [e.column for e in ib_encoded.ENCODINGS],
            "ts, port_id, node_id, marks",
        )
        primary_key = "port_id, ts"
    rows, tuple_bytes, value_bytes = _sql(
        "SELECT count(*), coalesce(sum(pg_column_size(s.*)), 0), coalesce(sum("
        + " + ".join(f"coalesce(pg_column_size({c}), 0)" for c in cells)
        + f"), 0) FROM {table} s"
    )[0]
    rows = int(rows)
    if not rows:
        return [f"| {table}: no rows | 0 | 0 |"]
    samples = _samples(f"({ENCODED[family].rows(table, 'true', '')}) st", family)
    heap = indexes = primary = 0
    for part in _partitions(table):
        heap += int(_sql(f"SELECT pg_table_size('{part}')")[0][0])
        for size, is_primary in _sql(
            f"SELECT pg_relation_size(indexrelid), indisprimary FROM pg_index WHERE indrelid = '{part}'::regclass"
        ):
            indexes += size
            primary += size if is_primary else 0
    parts = [
        (f"tuple header, NULL bitmap, keys ({keys}), alignment", int(tuple_bytes) - int(value_bytes)),
        ("line pointer", 4 * rows),
        (f"values ({samples / rows:.1f} per row)", int(value_bytes)),
        ("page slack", heap - int(tuple_bytes) - 4 * rows),
        (f"primary key ({primary_key})", primary),
        ("BRIN on ts and the partial mark indexes", indexes - primary),
    ]  # fmt: skip
    lines = [
        f"| {table}: {name} | {size / rows:.1f} | {size / samples:.2f} |" for name, size in parts
    ]
    total = heap + indexes
    lines.append(f"| **{table} total** | **{total / rows:.1f}** | **{total / samples:.2f}** |")
    return lines
