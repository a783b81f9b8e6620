"""Partition maintenance of the time-series tables.

Raw tables and their compacted history (``ingest.history``) are partitioned by day,
rollups by 10 days (bounds aligned to the unix epoch, UTC). ``ensure_partitions`` creates what a window about to be
written needs, past or future, so a backfill into last week just works;
``drop_expired`` drops whole partitions older than the retention, which is
cheap (no DELETE, no vacuum). Both serialise on one advisory lock so two
workers never race on the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection

#: Arbitrary, stable key of the partition-maintenance advisory lock.
PARTITION_LOCK_KEY = 0x1C57_0001


@dataclass(frozen=True)
class PartitionedTable:
    """A partitioned table, its partition width and which retention setting applies."""

    name: str
    width_days: int
    retention_setting: str
    options: str = ""  # storage parameters of each partition (``WITH (…)``)


RAW_TABLES = (
    PartitionedTable("ingest_gpusample", 1, "INGEST_RAW_RETENTION_DAYS"),
    PartitionedTable("ingest_gpustep", 1, "INGEST_RAW_RETENTION_DAYS"),
    PartitionedTable("ingest_ibsample", 1, "INGEST_RAW_RETENTION_DAYS"),
    PartitionedTable("ingest_ibencoded", 1, "INGEST_RAW_RETENTION_DAYS"),
    PartitionedTable("ingest_kueuesample", 1, "INGEST_RAW_RETENTION_DAYS"),
    PartitionedTable("ingest_ibnodestep", 1, "INGEST_RAW_RETENTION_DAYS"),
)
ROLLUP_TABLES = (
    PartitionedTable("ingest_gpurollup", 10, "INGEST_ROLLUP_RETENTION_DAYS"),
    PartitionedTable("ingest_ibrollup", 10, "INGEST_ROLLUP_RETENTION_DAYS"),
    PartitionedTable("ingest_noderollup", 10, "INGEST_ROLLUP_RETENTION_DAYS"),
    PartitionedTable("ingest_heatmaptile", 10, "INGEST_ROLLUP_RETENTION_DAYS"),
    PartitionedTable("ingest_nodetile", 10, "INGEST_NODE_TILE_RETENTION_DAYS"),
)
TABLES = RAW_TABLES + ROLLUP_TABLES
#: Made by compaction only (``ingest.compaction``), dropped with the raw partitions.
HISTORY_TABLES = (
    PartitionedTable(
        "ingest_gpuhistory", 1, "INGEST_RAW_RETENTION_DAYS", "toast_tuple_target = 128"
    ),
    PartitionedTable(
        "ingest_ibhistory", 1, "INGEST_RAW_RETENTION_DAYS", "toast_tuple_target = 128"
    ),
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def partition_bounds(table: PartitionedTable, moment: datetime) -> tuple[datetime, datetime]:
    """The [lower, upper) range of the partition of ``table`` holding ``moment``."""
    days = (moment - EPOCH) // timedelta(days=1)
    lower = EPOCH + timedelta(days=days - days % table.width_days)
    return lower, lower + timedelta(days=table.width_days)


def partition_name(table: PartitionedTable, lower: datetime) -> str:
    """``ingest_gpusample_p20250131``: named after the partition's first day."""
    return f"{table.name}_p{lower:%Y%m%d}"


def _existing(table_name: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [table_name],
        )
        return {row[0] for row in cursor.fetchall()}


def _lock() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PARTITION_LOCK_KEY])


def _wanted(
    table: PartitionedTable, start: datetime, end: datetime
) -> list[tuple[str, datetime, datetime]]:
    wanted = []
    lower, upper = partition_bounds(table, start)
    while lower <= end:
        wanted.append((partition_name(table, lower), lower, upper))
        lower, upper = upper, upper + timedelta(days=table.width_days)
    return wanted


def ensure_partitions(
    start: datetime, end: datetime, tables: tuple[PartitionedTable, ...] = TABLES
) -> int:
    """Create the partitions covering [start, end] that are missing; returns how many were made.

    Runs in the caller's transaction (DDL is transactional in Postgres), so a
    rolled-back cycle leaves no half-made partition behind.
    """
    missing = [
        (table, *spec)
        for table in tables
        for spec in _wanted(table, start, end)
        if spec[0] not in _existing(table.name)
    ]
    if not missing:
        return 0
    _lock()
    created = 0
    with connection.cursor() as cursor:
        for table, name, lower, upper in missing:
            if name in _existing(table.name):  # made by another worker while we waited
                continue
            options = f" WITH ({table.options})" if table.options else ""
            cursor.execute(
                f'CREATE TABLE "{name}" PARTITION OF "{table.name}" '
                f"FOR VALUES FROM ('{lower.isoformat()}') TO ('{upper.isoformat()}'){options}"
            )
            created += 1
    return created


def _upper_bound_of(name: str, table: PartitionedTable) -> datetime | None:
    try:
        lower = datetime.strptime(name.rsplit("_p", 1)[1], "%Y%m%d").replace(tzinfo=UTC)
    except (IndexError, ValueError):
        return None
    return lower + timedelta(days=table.width_days)


def drop_expired(now: datetime | None = None) -> list[str]:
    """Drop every partition whose whole range is older than its table's retention."""
    now = now or datetime.now(UTC)
    dropped: list[str] = []
    _lock()
    with connection.cursor() as cursor:
        for table in TABLES + HISTORY_TABLES:
            horizon = now - timedelta(days=getattr(settings, table.retention_setting))
            for name in sorted(_existing(table.name)):
                upper = _upper_bound_of(name, table)
                if upper is not None and upper <= horizon:
                    cursor.execute(f'DROP TABLE "{name}"')
                    dropped.append(name)
    return dropped
