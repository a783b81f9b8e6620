"""Hourly node tiles: one node's GPU or IB device over one hour, every rollup column.

The node page's 6 h and 24 h charts are 5-minute columns of every GPU and port of one node.
Read from the rollups that is one row per device and bucket (576 rows per family for 6 h,
each on its own heap page, since rollups are written bucket by bucket for all nodes); a tile
(``ingest_nodetile``) holds a device's whole hour: ``cells[k][c]`` is rollup column
``COLUMNS[family][c]`` of the bucket at ``hour`` + 5 min × k (NULL: no value), bit k of
``mask`` says the device had a rollup row in that bucket. 6 h is 7 rows per device.

A device is what the node page draws: a GPU index, or an IB device name, whose value in a
bucket is the mean over its ports (the mean of one port is its value, exactly), as
``ingest.selectors`` computes it from the rollups. Tiles are refreshed by ``ingest.rollups``
in the same transaction as the rollups they copy, slot range by slot range like the heatmap
tiles (``ingest.heatmap_metrics``), each bucket once it is complete: the bucket still filling
(and one before it, for margin) is read from the rollups, behind the family's cursor.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from .models import IngestCursor
from .store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS

COLUMNS: dict[str, tuple[str, ...]] = {"gpu": GPU_VALUE_COLUMNS, "ib": IB_VALUE_COLUMNS}
#: A tile's slots: the 5-minute buckets of one hour.
SLOTS = 12
SLOT_SECONDS = 300
_EPOCH = "date_part('epoch', {})::bigint"


def _slot(ts: str) -> str:
    """The slot (0-11) of a bucket at ``ts`` in its hour's tile."""
    return f"mod({_EPOCH.format(ts)}, 3600)::int / {SLOT_SECONDS}"


def _buckets_sql(family: str) -> str:
    # (ts, node_id, device, values) per device and rollup bucket in [%(low)s, %(high)s).
    if family == "gpu":
        values = ", ".join(f"{c}::float8" for c in GPU_VALUE_COLUMNS)
        return (
            f"SELECT ts, node_id, gpu::text AS device, ARRAY[{values}] AS v "
            "FROM ingest_gpurollup WHERE ts >= %(low)s AND ts < %(high)s"
        )
    values = ", ".join(f"avg(s.{c})::float8" for c in IB_VALUE_COLUMNS)
    return (
        f"SELECT s.ts, p.node_id, p.device, ARRAY[{values}] AS v "
        "FROM ingest_ibrollup s JOIN ingest_ibport p ON p.id = s.port_id "
        "WHERE s.ts >= %(low)s AND s.ts < %(high)s GROUP BY s.ts, p.node_id, p.device"
    )


def _placed(width: int) -> str:
    # The group's rows (``g.rows``: [m][1 + width], the slot first, in slot order) as a
    # [12][width] tile. Without holes between the first and last slot (the rule) NULL rows
    # pad them into place; otherwise each slot looks itself up. (A subscript next to a
    # slice is a slice from 1, hence ``x:x`` and ``unnest``.)
    nulls = "array_fill(NULL::float8, ARRAY[{}, " + str(width) + "])"
    row = f"ARRAY(SELECT unnest(g.rows[x:x][2:{width + 1}]))"
    lookup = (
        f"ARRAY(SELECT coalesce((SELECT {row} FROM generate_subscripts(g.rows, 1) x "
        f"WHERE g.rows[x][1] = i), array_fill(NULL::float8, ARRAY[{width}])) "
        f"FROM generate_series(0, {SLOTS - 1}) i ORDER BY i)"
    )
    return (
        f"CASE WHEN g.dense THEN {nulls.format('g.first')} || g.rows[1:g.count][2:{width + 1}] "
        f"|| {nulls.format(f'{SLOTS - 1} - g.last')} ELSE {lookup} END"
    )


def refresh_sql(family: str) -> str:
    """Upsert of ``family``'s tiles from the rollups in [%(low)s, %(high)s).

    Only the slots of that range change in a tile (``low_epoch``/``high_epoch``: the bounds
    as unix seconds, multiples of 300); the rest of the hour is already there, as every
    rollup refresh refreshes its tiles.
    """
    width = len(COLUMNS[family])
    hour = _EPOCH.format("EXCLUDED.hour")
    lo = f"greatest(0, ((%(low_epoch)s - {hour}) / {SLOT_SECONDS})::int)"
    hi = f"least({SLOTS - 1}, ((%(high_epoch)s - {hour}) / {SLOT_SECONDS})::int - 1)"
    return (
        "INSERT INTO ingest_nodetile AS t (node_id, family, hour, device, mask, cells) "
        f"SELECT g.node_id, '{family}', g.hour, g.device, g.mask, {_placed(width)} FROM ("
        "SELECT hour, node_id, device, bit_or(1 << slot)::smallint AS mask, "
        "min(slot) AS first, max(slot) AS last, count(*)::int AS count, "
        "count(*) = max(slot) - min(slot) + 1 AS dense, "
        # One ordered aggregate, so one sort per group: each row carries its slot.
        "array_agg(array_prepend(slot::float8, v) ORDER BY slot) AS rows FROM ("
        "SELECT date_bin('1 hour', ts, 'epoch') AS hour, node_id, device, "
        f"{_slot('ts')} AS slot, v "
        f"FROM ({_buckets_sql(family)}) b) r GROUP BY hour, node_id, device) g "
        "ON CONFLICT (node_id, family, hour, device) DO UPDATE SET "
        f"cells[{lo} + 1 : {hi} + 1][1:{width}] = EXCLUDED.cells[{lo} + 1 : {hi} + 1][1:{width}], "
        f"mask = t.mask & ~(((1 << ({hi} - {lo} + 1)) - 1) << {lo}) | EXCLUDED.mask"
    )


REFRESH = {family: refresh_sql(family) for family in COLUMNS}


def refresh(family: str, low: datetime, high: datetime, end: datetime) -> int:
    """Tile ``family``'s rollup buckets in [low, high) (5-minute aligned, partitions made by
    the caller) but for the one still filling, the bucket of ``end`` (the raw rows' end, which
    the cursor reaches in this transaction): it changes every cycle until it is complete, and
    rewriting every device's tile each cycle would write ~10× what the rollups do. Readers
    take the last buckets from the rollups (``READ_FROM_ROLLUPS``). Returns the tiles written.
    """
    high = min(high, _tiled_until(family, end))
    if high <= low:
        return 0
    params: dict[str, Any] = {"low": low, "high": high}
    params.update(low_epoch=int(low.timestamp()), high_epoch=int(high.timestamp()))
    with connection.cursor() as cursor:
        cursor.execute(REFRESH[family], params)
        return cursor.rowcount


def _bucket(moment: datetime) -> datetime:
    return datetime.fromtimestamp(int(moment.timestamp()) // SLOT_SECONDS * SLOT_SECONDS, UTC)


def _tiled_until(family: str, end: datetime) -> datetime:
    # The cursor ends at max(its place, end) once this commits: a refresh of the past (a
    # re-ingest behind the cursor) tiles its last bucket too.
    covered = IngestCursor.objects.filter(family=family).values_list("covered_until", flat=True)
    return _bucket(max([end, *covered]))


#: How far back from the family's cursor the node series read the rollups, not the tiles:
#: the bucket still filling, and one more should a cursor run ahead of its refresh.
READ_FROM_ROLLUPS = timedelta(seconds=SLOT_SECONDS)


def tiled_before(family: str) -> datetime | None:
    """Tiles hold ``family``'s rollup buckets before this (None: no cursor, nothing known)."""
    covered = IngestCursor.objects.filter(family=family).values_list("covered_until", flat=True)
    return _bucket(covered[0]) - READ_FROM_ROLLUPS if covered else None


def covers(start: datetime, end: datetime, step: int) -> bool:
    """Whether tiles hold the columns of [start, end) at ``step`` seconds (whole seconds, 5-minute
    columns, from an hour the retention keeps: ``partitions.drop_expired`` drops only partitions
    wholly older than it)."""
    kept = datetime.now(UTC) - timedelta(days=settings.INGEST_NODE_TILE_RETENTION_DAYS)
    whole_seconds = start.microsecond == 0 and end.microsecond == 0
    return step == SLOT_SECONDS and whole_seconds and start - timedelta(hours=1) >= kept


def _tail_sql(family: str) -> str:
    # The node's rollup buckets in [max(start, until), end) as one-slot tiles (what the tiles
    # do not hold yet), the same values the tiles would: one query with the tiles.
    if family == "gpu":
        values = ", ".join(f"{c}::float8" for c in GPU_VALUE_COLUMNS)
        return (
            f"SELECT gpu::text AS device, date_bin('1 hour', ts, 'epoch') AS hour, {_slot('ts')} AS slot, "
            f"ARRAY[{values}] AS v FROM ingest_gpurollup WHERE node_id = (SELECT id FROM n) "
            "AND ts >= greatest(%(start)s, c.until) AND ts < %(end)s"
        )
    values = ", ".join(f"avg(s.{c})::float8" for c in IB_VALUE_COLUMNS)
    return (
        f"SELECT p.device, date_bin('1 hour', s.ts, 'epoch') AS hour, "
        f"{_slot('s.ts')} AS slot, ARRAY[{values}] AS v "
        "FROM ingest_ibport p JOIN ingest_ibrollup s ON s.port_id = p.id "
        "WHERE p.node_id = (SELECT id FROM n) AND s.ts >= greatest(%(start)s, c.until) "
        "AND s.ts < %(end)s GROUP BY s.ts, p.device"
    )


def _read_sql(family: str) -> str:
    # (cursor, kind, device, hour, mask, cells, first slot of cells): the tiles of the window's
    # hours before ``until``, then the rollup buckets from it; no rows without a cursor.
    return (
        f"WITH c AS (SELECT covered_until, date_bin('{SLOT_SECONDS} seconds', covered_until, "
        f"'epoch') - %(margin)s AS until FROM ingest_ingestcursor WHERE family = '{family}'), "
        "n AS (SELECT id FROM ingest_node WHERE name = %(node)s) "
        "SELECT c.covered_until, 't', t.device, t.hour, t.mask, t.cells, 0 FROM c "
        "LEFT JOIN ingest_nodetile t ON t.node_id = (SELECT id FROM n) "
        f"AND t.family = '{family}' "
        "AND t.hour >= %(first_hour)s AND t.hour < least(%(end)s, c.until) "
        "UNION ALL SELECT c.covered_until, 'r', b.device, b.hour, (1 << b.slot)::smallint, "
        f"ARRAY[b.v], b.slot FROM c CROSS JOIN LATERAL ({_tail_sql(family)}) b"
    )


READ = {family: _read_sql(family) for family in COLUMNS}


def read_params(node: str, start: datetime, end: datetime) -> dict[str, Any]:
    """The parameters of ``READ`` (either family) for ``node``'s window [start, end)."""
    first_hour = datetime.fromtimestamp(int(start.timestamp()) // 3600 * 3600, UTC)
    return {"node": node, "start": start, "end": end, "first_hour": first_hour,
            "margin": READ_FROM_ROLLUPS}  # fmt: skip


def series(
    node: str, family: str, start: datetime, end: datetime
) -> tuple[datetime | None, dict[str, dict[str, list[float | None]]]]:
    """(``tiled_before``, device → column → values) of the 5-minute columns from ``start``
    (whole seconds) to ``end``: column j is the rollup bucket with start + 5 min × j <= ts <
    start + 5 min × (j + 1) and ts < end, as the rollups give it, from the tiles and, for the
    buckets not tiled yet, the rollups. Devices without a bucket are left out; no cursor
    (what the tiles hold is not known): (None, {}). One query.
    """
    with connection.cursor() as cursor:
        cursor.execute(READ[family], read_params(node, start, end))
        return assemble(family, cursor.fetchall(), start, end)


def assemble(
    family: str, found: list[tuple], start: datetime, end: datetime
) -> tuple[datetime | None, dict[str, dict[str, list[float | None]]]]:
    """``series`` from the rows ``READ[family]`` answered (any order)."""
    if not found:
        return None, {}
    until = _bucket(found[0][0]) - READ_FROM_ROLLUPS
    tiles = [row[1:] for row in found if row[2] is not None]
    second = timedelta(seconds=1)
    span, tiled = (end - start) // second, (min(end, until) - start) // second
    width = -(-span // SLOT_SECONDS)
    names = COLUMNS[family]
    result: dict[str, dict[str, list[float | None]]] = {}
    for kind, device, hour, mask, cells, base in tiles:
        offset = (hour - start) // second
        stop = tiled if kind == "t" else span  # a tile's slots from ``until`` on are not its
        first = max(base, -(offset // SLOT_SECONDS))  # first slot at or after start
        last = min(base + len(cells) - 1, (stop - offset - 1) // SLOT_SECONDS)  # before end
        if first > last or not mask >> first & ((1 << (last - first + 1)) - 1):
            continue
        columns = result.get(device)
        if columns is None:
            columns = result[device] = {name: [None] * width for name in names}
        j = offset // SLOT_SECONDS + first
        chosen = cells[first - base : last - base + 1]
        for name, values in zip(names, zip(*chosen, strict=True), strict=True):
            columns[name][j : j + len(values)] = values
    return until, result
