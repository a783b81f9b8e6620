"""Bulk writes: binary COPY into a staging table, then one INSERT … ON CONFLICT DO NOTHING.

COPY cannot skip duplicates, so rows land first in a session-local temp table
(no WAL, no index) and are moved into the partitioned table by a single
set-based insert that ignores rows already there. That makes a re-run window
write nothing (exactly once) at close to raw COPY speed. GPU / IB rows older than the
hot window also skip the steps compacted history holds (``ingest.compaction``).
Everything runs in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson
from django.conf import settings
from django.db import connection

from . import compaction
from .history import HISTORIES, gpu_rows, ib_rows, present_in_history_sql
from .hot_layouts import EncodedHot
from .partitions import ensure_partitions


@dataclass(frozen=True)
class CopyTable:
    """A partitioned table written by COPY: its columns, their Postgres types and its key."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    key: tuple[str, ...]

    @property
    def stage(self) -> str:
        return f"{self.name}_stage"


_F8 = "float8"
GPU_VALUE_COLUMNS = (
    "util", "tensor", "sm", "dram", "power", "temp", "nvlink_bw",
    "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery",
)  # fmt: skip
#: Raw-only GPU columns (not rolled up): hardware health, see ``ingest.sources.dcgm.HEALTH``.
GPU_HEALTH_COLUMNS = (
    "ecc_dbe_vol", "pcie_replay", "row_remap_failure", "row_remap_pending", "clock_events",
)  # fmt: skip
IB_VALUE_COLUMNS = (
    "tx_bytes", "rx_bytes", "tx_packets", "rx_packets", "xmit_wait", "symbol_errors",
    "link_downed", "link_error_recovery", "rcv_errors", "local_link_integrity",
    "excessive_buffer_overrun", "rate", "state", "phys_state", "saturated",
)  # fmt: skip
GPU_TABLE = CopyTable(
    "ingest_gpusample",
    ("ts", "node_id", "gpu", *GPU_VALUE_COLUMNS),
    ("timestamptz", "int4", "int2", *[_F8] * len(GPU_VALUE_COLUMNS)),
    ("node_id", "gpu", "ts"),
)
#: What the dcgm source writes: the value columns, then the hardware health columns (real).
GPU_SAMPLE_TABLE = CopyTable(
    GPU_TABLE.name,
    (*GPU_TABLE.columns, *GPU_HEALTH_COLUMNS),
    (*GPU_TABLE.types, *["float4"] * len(GPU_HEALTH_COLUMNS)),
    GPU_TABLE.key,
)
IB_TABLE = CopyTable(
    "ingest_ibsample",
    ("ts", "port_id", "node_id", *IB_VALUE_COLUMNS),
    ("timestamptz", "int4", "int4", *[_F8] * 12, "int2", "int2", "int2"),
    ("port_id", "ts"),
)
KUEUE_TABLE = CopyTable(
    "ingest_kueuesample",
    ("ts", "cluster_queue_id", "pending_active", "pending_inadmissible", "admitted_active",
     "admitted", "wait_p50", "wait_p95"),
    ("timestamptz", "int4", *[_F8] * 6),
    ("cluster_queue_id", "ts"),
)  # fmt: skip


HISTORY_OF = {h.hot: h for h in HISTORIES.values()}


def json_rows(rows: Iterable[Sequence[object]]) -> str:
    """Rows as ONE json parameter, read back with ``json_array_elements(%s::json)``.

    Client-side binding dumps a list parameter element by element in Python;
    tens of thousands of ports as ``unnest`` arrays cost more than the statement.
    """
    return orjson.dumps(list(rows)).decode()


def timestamps(seconds: Iterable[float]) -> dict[float, datetime]:
    """Unix seconds → aware datetimes, converted once per distinct step."""
    return {ts: datetime.fromtimestamp(ts, UTC) for ts in set(seconds)}


def copy_rows(
    table: CopyTable, rows: Sequence[Sequence[object]], *, into: str | None = None
) -> None:
    """Binary COPY of ``rows`` (tuples in ``table.columns`` order) into ``into`` (default: the table)."""
    columns = ", ".join(table.columns)
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor
        with cursor.copy(
            f"COPY {into or table.name} ({columns}) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(list(table.types))
            for row in rows:
                copy.write_row(row)


def insert_rows(table: CopyTable, rows: Sequence[Sequence[object]]) -> int:
    """Write rows exactly once: COPY into staging, then insert what the table lacks.

    ``rows[i][0]`` must be the ``ts`` (a datetime); partitions for the rows'
    span are created first. Returns the number of rows actually inserted.
    """
    if not rows:
        return 0
    first = min(row[0] for row in rows)
    last = max(row[0] for row in rows)
    ensure_partitions(first, last)  # type: ignore[arg-type]
    open_stage(table)
    copy_rows(table, rows, into=table.stage)
    return insert_staged(table, first, last)  # type: ignore[arg-type]


def open_stage(table: CopyTable) -> None:
    """An empty ``table.stage`` (a temp table like ``table``, emptied at commit)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {table.stage} "
            f"(LIKE {table.name} INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        )
        cursor.execute(f"TRUNCATE {table.stage}")


def insert_staged(table: CopyTable, first: datetime, last: datetime) -> int:
    """``insert_rows`` from a filled stage whose rows span [first, last]; rows inserted.

    The partitions for [first, last] must exist before ``open_stage``: the stage's ``LIKE``
    holds a lock on the parent table until commit, and creating a partition then, while
    another worker waits for the partition lock with the same lock held, deadlocks.
    """
    columns = ", ".join(table.columns)
    history = HISTORY_OF.get(table.name)
    encoded = compaction.ENCODED[history.family] if history else None
    # rows from ``first`` on may meet compacted history (``ingest.compaction``)
    late = history is not None and first < compaction.late_threshold()
    with connection.cursor() as cursor:
        if history is not None and late:  # steps already compacted are not written again
            compaction.lock_for_late_rows()
            cursor.execute(present_in_history_sql(history, table.stage))
        fits = _encoded_fit(encoded)
        if encoded:  # a device's step stored in either table is not written again
            for sql in encoded.stored(table.stage):
                cursor.execute(sql)
        cursor.execute(
            f"INSERT INTO {table.name} ({columns}) SELECT {columns} FROM {table.stage} "
            f"WHERE NOT {fits} ORDER BY {', '.join(table.key)} ON CONFLICT DO NOTHING"
        )
        inserted = cursor.rowcount
        if encoded and fits != "false":
            cursor.execute(f"SELECT count(*) FROM {table.stage} WHERE {fits}")
            inserted += cursor.fetchone()[0]
            cursor.execute(encoded.insert(table.stage, fits))
    if late and inserted:
        compaction.rewind(table.name, first, last)
    return inserted


def _encoded_fit(encoded: EncodedHot | None) -> str:
    """SQL predicate of the staged rows written encoded (the rest stay float8 rows)."""
    if encoded is None or not settings.INGEST_ENCODED_HOT_ROWS:
        return "false"
    return encoded.fits(settings.INGEST_STEP_SECONDS)


def upsert_nodes(seen: Mapping[str, tuple[datetime, datetime]]) -> dict[str, int]:
    """Create or touch nodes (first_seen = earliest, last_seen = latest); name → id.

    A node whose span already covers ``seen`` is not rewritten (a re-run window,
    or the topology family touching every node each cycle, writes no dead tuples).
    """
    if not seen:
        return {}
    names = sorted(seen)
    sql = """
        WITH wanted AS (
            SELECT r->>0 AS n, (r->>1)::timestamptz AS f, (r->>2)::timestamptz AS l
            FROM json_array_elements(%s::json) AS r
        ), written AS (
            INSERT INTO ingest_node
                (name, pool, unschedulable, leaf_switch, gpu_model, first_seen, last_seen)
            SELECT n, 'unknown', false, '', '', f, l FROM wanted
            ON CONFLICT (name) DO UPDATE SET
                first_seen = LEAST(ingest_node.first_seen, EXCLUDED.first_seen),
                last_seen = GREATEST(ingest_node.last_seen, EXCLUDED.last_seen)
            WHERE ingest_node.first_seen > EXCLUDED.first_seen
                OR ingest_node.last_seen < EXCLUDED.last_seen
            RETURNING name, id
        )
        SELECT name, id FROM written
        UNION ALL SELECT node.name, node.id FROM ingest_node node JOIN wanted ON node.name = wanted.n
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [json_rows((n, *seen[n]) for n in names)])
        ids = dict(cursor.fetchall())
        # A row another transaction inserted after this statement's snapshot, found as a
        # conflict and left unchanged, is neither RETURNED nor visible here: read it again.
        missing = [name for name in names if name not in ids]
        if missing:
            cursor.execute("SELECT name, id FROM ingest_node WHERE name = ANY(%s)", [missing])
            ids.update(dict(cursor.fetchall()))
    return ids


def upsert_ports(ports: Iterable[tuple[int, str, int, str]]) -> dict[tuple[int, str, int], int]:
    """Create IB ports (node_id, device, port, guid) not yet known; (node_id, device, port) → id.

    A known port is rewritten only when a non-empty guid changes it.
    """
    guid_of: dict[tuple[int, str, int], str] = {}
    for node_id, device, number, guid in ports:
        guid_of[(node_id, device, number)] = guid or guid_of.get((node_id, device, number), "")
    unique = sorted((*key, guid) for key, guid in guid_of.items())
    if not unique:
        return {}
    sql = """
        WITH wanted AS (
            SELECT (r->>0)::bigint AS n, r->>1 AS d, (r->>2)::int AS p, r->>3 AS g
            FROM json_array_elements(%s::json) AS r
        ), written AS (
            INSERT INTO ingest_ibport (node_id, device, port, guid, leaf_switch, switch_port)
            SELECT n, d, p, g, '', '' FROM wanted
            ON CONFLICT (node_id, device, port) DO UPDATE SET guid = EXCLUDED.guid
            WHERE EXCLUDED.guid <> '' AND ingest_ibport.guid <> EXCLUDED.guid
            RETURNING node_id, device, port, id
        )
        SELECT node_id, device, port, id FROM written
        UNION ALL SELECT p.node_id, p.device, p.port, p.id FROM ingest_ibport p
            JOIN wanted ON (p.node_id, p.device, p.port) = (wanted.n, wanted.d, wanted.p)
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [json_rows(unique)])
        ids = {(n, d, p): pk for n, d, p, pk in cursor.fetchall()}
        missing = [key for key in guid_of if key not in ids]  # see upsert_nodes
        if missing:
            cursor.execute(
                "SELECT node_id, device, port, id FROM ingest_ibport WHERE (node_id, device, port) "
                "IN (SELECT (r->>0)::bigint, r->>1, (r->>2)::int FROM json_array_elements(%s::json) r)",
                [json_rows(missing)],
            )
            ids.update({(n, d, p): pk for n, d, p, pk in cursor.fetchall()})
    return ids


def stored_gpu_values(
    at: datetime, columns: Sequence[str]
) -> dict[str, dict[tuple[str, int], float]]:
    """The GPU values stored at step ``at``: column → (node name, gpu) → value (non-NULL).

    What a counter carried into the next window starts from (``ingest.sampling``).
    """
    names = [c for c in columns if c in GPU_VALUE_COLUMNS or c in GPU_HEALTH_COLUMNS]
    out: dict[str, dict[tuple[str, int], float]] = {c: {} for c in names}
    if not names:
        return out
    select = ", ".join(f"s.{c}" for c in names)
    rows = gpu_rows("%s", "%s", columns=names)  # per-GPU rows, step rows and history alike
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT n.name, s.gpu, {select} FROM {rows} s "  # noqa: S608 - fixed names
            "JOIN ingest_node n ON n.id = s.node_id",
            [at, at],
        )
        for node, gpu, *values in cursor.fetchall():
            for name, value in zip(names, values, strict=True):
                if value is not None:
                    out[name][(node, gpu)] = value
    return out


def stored_ib_values(
    at: datetime, columns: Sequence[str]
) -> dict[str, dict[tuple[str, str, int], float]]:
    """The IB values stored at step ``at``: column → (node, device, port) → value (non-NULL)."""
    names = [c for c in columns if c in IB_VALUE_COLUMNS]
    out: dict[str, dict[tuple[str, str, int], float]] = {c: {} for c in names}
    if not names:
        return out
    select = ", ".join(f"s.{c}" for c in names)
    rows = ib_rows("%s", "%s", columns=names)  # float8 rows, encoded rows and history alike
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT n.name, p.device, p.port, {select} FROM {rows} s "  # noqa: S608
            "JOIN ingest_ibport p ON p.id = s.port_id JOIN ingest_node n ON n.id = s.node_id",
            [at, at],
        )
        for node, device, port, *values in cursor.fetchall():
            for name, value in zip(names, values, strict=True):
                if value is not None:
                    out[name][(node, device, port)] = value
    return out
