"""Compaction: hot GPU / IB sample rows older than INGEST_HOT_HOURS become compacted history.

Hour by hour, oldest first, each hour in ONE transaction: the hour's hot rows are deleted
and their history rows inserted by one statement (``ingest.history.move_sql``), and the
day's ``Compaction`` row advances past the hour. A reader sees the hour either hot or
compacted, never both or neither (``ingest_gpu_rows`` reads both tables in one snapshot);
a worker killed mid-hour rolls the hour back and the next run redoes it; a run that finds
an hour done skips it. Once every hour of a day is done, the emptied partition is truncated
(rows that could not be compacted are kept), which returns its space at once.

Late rows (a backfill older than the hot window) land in the hot table as usual:
``ingest.store`` rewinds the day's ``Compaction`` row, and the next run merges them
with the hour's history rows (``reopen_sql``). Both sides take ``COMPACTION_LOCK_KEY``
(ingest shared, compaction exclusive), so an hour is never compacted while such rows are
being written into it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.conf import settings
from django.db import OperationalError, connection, transaction

from core import clock

from . import gpu_steps, history, ib_encoded
from .history import HISTORIES, HistoryTable
from .models import Compaction
from .partitions import HISTORY_TABLES, ensure_partitions

log = logging.getLogger(__name__)
#: Arbitrary, stable key of the advisory lock between compaction and late ingest writes.
COMPACTION_LOCK_KEY = 0x1C57_0002
HOUR = timedelta(hours=1)
#: Each family's encoded hot table (``ingest.gpu_steps``, ``ingest.ib_encoded``): what
#: ``ingest.store`` writes beside the float8 hot rows, compacted with them hour by hour.
ENCODED = {"gpu": gpu_steps.LAYOUT, "ib": ib_encoded.LAYOUT}
DAY = timedelta(days=1)
#: An hour's transaction between its steps: a seam for the crash test (None in production).
Hook = Callable[[str, HistoryTable, datetime], None]


@dataclass
class CompactionReport:
    """What one compaction run did."""

    hours: int = 0
    rows: int = 0
    leftover: int = 0
    days_finished: list[str] = field(default_factory=list)
    seconds: float = 0.0
    pending_hours: int = 0  # hours past the hot window left for the next run (budget spent)


def horizon(now: datetime | None = None) -> datetime:
    """The start of the hot window: hours ending at or before it are compacted."""
    now = now or clock.now()
    return _hour_floor(now - timedelta(hours=settings.INGEST_HOT_HOURS))


def _hour_floor(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _step() -> int:
    step = int(settings.INGEST_STEP_SECONDS)
    if 3600 % step:
        raise ValueError(f"INGEST_STEP_SECONDS={step} must divide an hour for compaction")
    return step


def _partition_days(table: HistoryTable, before: datetime) -> list[date]:
    """Days of the hot table's partitions that start before ``before``, oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [table.hot],
        )
        names = [row[0] for row in cursor.fetchall()]
    days = [datetime.strptime(n.rsplit("_p", 1)[1], "%Y%m%d").date() for n in names]
    return sorted(d for d in days if _midnight(d) < before)


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def pending(now: datetime | None = None) -> Iterator[tuple[HistoryTable, date]]:
    """(table, day) of every partition with hours past the hot window not yet compacted."""
    edge = horizon(now)
    for table in HISTORIES.values():
        done = {
            c.day: c for c in Compaction.objects.filter(table=table.hot, finished_at__isnull=False)
        }
        for day in _partition_days(table, edge):
            if day not in done:
                yield table, day


def hours_pending(now: datetime | None = None) -> dict[str, int]:
    """Hot table → hours past the hot window not compacted yet (every table, 0 when none)."""
    edge = horizon(now)
    backlog = {table.hot: 0 for table in HISTORIES.values()}
    for table, day in pending(now):
        backlog[table.hot] += len(_hours_left(table, day, edge))
    return backlog


def compact(
    now: datetime | None = None,
    budget_seconds: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    hook: Hook | None = None,
) -> CompactionReport:
    """Compact every hour past the hot window, oldest first, until ``budget_seconds`` is spent.

    ``progress(label, done, total)`` is called after each hour (the management command's bar).
    """
    edge, step, began = horizon(now), _step(), time.monotonic()
    budget = settings.INGEST_COMPACTION_BUDGET_SECONDS if budget_seconds is None else budget_seconds
    report = CompactionReport()
    work = [(table, day, _hours_left(table, day, edge)) for table, day in pending(now)]
    total, done = sum(len(hours) for *_, hours in work), 0
    for table, day, hours in work:
        for hour in hours:
            if time.monotonic() - began >= budget:
                report.pending_hours = total - done
                report.seconds = time.monotonic() - began
                return report
            moved, leftover = _compact_hour(table, day, hour, step, hook)
            report.hours, report.rows, report.leftover = (
                report.hours + 1,
                report.rows + moved,
                report.leftover + leftover,
            )
            done += 1
            if progress:
                progress(f"{table.hot} {hour:%Y-%m-%d %H:%M}", done, total)
        if _midnight(day) + DAY <= edge and _finish_day(table, day, hook):
            report.days_finished.append(f"{table.hot} {day:%Y-%m-%d}")
    report.seconds = time.monotonic() - began
    return report


def _hours_left(table: HistoryTable, day: date, edge: datetime) -> list[datetime]:
    state = Compaction.objects.filter(table=table.hot, day=day).first()
    hour = state.compacted_until if state else _midnight(day)
    end = min(_midnight(day) + DAY, edge)
    hours = []
    while hour < end:
        hours.append(hour)
        hour += HOUR
    return hours


def _lock(cursor) -> None:  # noqa: ANN001 - a Django cursor
    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [COMPACTION_LOCK_KEY])


def _compact_hour(
    table: HistoryTable, day: date, hour: datetime, step: int, hook: Hook | None
) -> tuple[int, int]:
    """Compact one hour in one transaction; returns (rows moved, rows left hot)."""
    began = time.monotonic()
    params = {"hour": hour, "next": hour + HOUR}
    with transaction.atomic(), connection.cursor() as cursor:
        _lock(cursor)
        state, _ = Compaction.objects.select_for_update().get_or_create(
            table=table.hot,
            day=day,
            defaults={"compacted_until": _midnight(day), "high_water": _midnight(day)},
        )
        if state.compacted_until > hour:  # another run did it meanwhile
            return 0, 0
        encoded = ENCODED[table.family]  # the encoded hot rows join the hour
        also = encoded.hour_rows_sql(step)
        cursor.execute(history.count_sql(table, step, also), params)
        rows, compactable = cursor.fetchone()
        moved = 0
        if compactable:
            ensure_partitions(hour, hour, _history_partitions(table))
            if hour < state.high_water:  # late rows for an hour already compacted: merge
                cursor.execute(history.reopen_sql(table, step, also), params)
            if hook:
                hook("before_move", table, hour)
            cursor.execute(history.move_sql(table, step, encoded.move_parts(step)), params)
            moved = compactable
        if hook:
            hook("after_move", table, hour)
        state.compacted_until = hour + HOUR
        state.high_water = max(state.high_water, hour + HOUR)
        state.rows += moved
        state.leftover += rows - compactable
        state.seconds += time.monotonic() - began
        state.finished_at = None
        state.save()
    return moved, rows - compactable


def _history_partitions(table: HistoryTable) -> tuple:
    return tuple(t for t in HISTORY_TABLES if t.name == table.history)


def _finish_day(table: HistoryTable, day: date, hook: Hook | None) -> bool:
    """Truncate the day's hot partition once every hour is compacted (rows left hot are kept).

    Takes the partition's ACCESS EXCLUSIVE lock, waiting at most 5 s for readers of that
    day; on timeout the next run tries again. Returns whether the day was finished.
    """
    name = f"{table.hot}_p{day:%Y%m%d}"
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            _lock(cursor)
            state = Compaction.objects.select_for_update().filter(table=table.hot, day=day).first()
            if state is None or state.compacted_until < _midnight(day) + DAY:
                return False
            cursor.execute("SET LOCAL lock_timeout = '5s'")
            cursor.execute(f'LOCK TABLE "{name}" IN ACCESS EXCLUSIVE MODE')
            _truncate_encoded(cursor, ENCODED[table.family].table, day)
            state.leftover = _truncate(cursor, name, keep=bool(state.leftover))
            if hook:
                hook("after_truncate", table, _midnight(day))
            state.finished_at = datetime.now(UTC)
            state.save()
    except OperationalError as exc:  # lock timeout: readers of that day; next run
        log.info("compaction: %s not truncated this run: %s", name, exc)
        return False
    return True


def _truncate(cursor, name: str, *, keep: bool) -> int:  # noqa: ANN001 - a Django cursor
    """TRUNCATE the partition ``name`` (its space returns at once); with ``keep``, the rows
    still in it (those compaction left) are copied back. Returns the rows kept."""
    if not keep:
        cursor.execute(f'TRUNCATE "{name}"')
        return 0
    cursor.execute(f'CREATE TEMP TABLE compaction_keep ON COMMIT DROP AS SELECT * FROM "{name}"')
    cursor.execute(f'TRUNCATE "{name}"')
    cursor.execute(f'INSERT INTO "{name}" SELECT * FROM compaction_keep')
    kept = cursor.rowcount
    cursor.execute("DROP TABLE compaction_keep")  # a second partition may be kept next
    return kept


def _truncate_encoded(cursor, parent: str, day: date) -> None:  # noqa: ANN001 - a Django cursor
    """Empty the day's partition of an encoded hot table, keeping any row compaction left
    (none is, while INGEST_STEP_SECONDS is the step the rows were written on)."""
    name = f"{parent}_p{day:%Y%m%d}"
    cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
    if not cursor.fetchone()[0]:
        return
    cursor.execute(f'LOCK TABLE "{name}" IN ACCESS EXCLUSIVE MODE')
    cursor.execute(f'SELECT EXISTS (SELECT FROM "{name}")')
    _truncate(cursor, name, keep=cursor.fetchone()[0])


def late_threshold(now: datetime | None = None) -> datetime:
    """Hot rows older than this may meet compaction (an hour of margin for clock skew)."""
    return horizon(now) + HOUR


def lock_for_late_rows() -> None:
    """Taken by ``ingest.store`` before it writes hot rows older than ``late_threshold``:
    waits for a compaction hour in progress; held until the writer commits."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock_shared(%s)", [COMPACTION_LOCK_KEY])


def rewind(hot_table: str, first: datetime, last: datetime) -> int:
    """After writing late rows in [first, last]: their days' compaction restarts at their hour."""
    rewound = 0
    for state in Compaction.objects.select_for_update().filter(
        table=hot_table, day__gte=first.date(), day__lte=last.date(), compacted_until__gt=first
    ):
        state.compacted_until = max(_hour_floor(first), _midnight(state.day))
        state.finished_at = None
        state.save(update_fields=["compacted_until", "finished_at"])
        rewound += 1
    return rewound
