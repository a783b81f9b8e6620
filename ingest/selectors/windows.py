"""What every ingest read shares: the raw-or-rollup choice, time buckets, one cursor helper.

Raw samples or 5-minute rollups are chosen by ``use_rollup``: rollups when the window is
longer than 12 h (node series: from 6 h) or the resolution is ≥ 300 s. Raw samples are read
through ``ingest.history.gpu_rows`` / ``ib_rows``: hot rows and compacted history alike.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from ..history import columns_in, gpu_rows, ib_rows
from ..models.choices import Family

ROLLUP_WINDOW = timedelta(hours=12)
ROLLUP_STEP_SECONDS = 300
NODE_ROLLUP_WINDOW = timedelta(hours=6)
#: Upper bound of a raw read "from ts on" (SQL).
ALL_AFTER = "'infinity'"


def use_rollup(start: datetime, end: datetime, step: int | None = None) -> bool:
    """Rollups for windows over 12 h or resolutions of 300 s and more."""
    return end - start > ROLLUP_WINDOW or (step is not None and step >= ROLLUP_STEP_SECONDS)


def source_table(family: str, rollup: bool, lo: str = "%s", hi: str = "%s", uses: str = "") -> str:
    """The rollup table, or the raw samples (hot and compacted) with ``lo <= ts < hi``;
    ``uses``: SQL naming the value columns read (default: all of them)."""
    if rollup:
        return f"ingest_{family}rollup"
    columns = columns_in(family, uses) if uses else None
    reader = gpu_rows if family == Family.GPU else ib_rows
    return reader(lo, hi, exclusive=True, columns=columns)


def bucket_times(start: datetime, end: datetime, step: int) -> list[datetime]:
    """The start of every ``step``-second bucket of [start, end) (at least one)."""
    count = max(1, -(-int((end - start).total_seconds()) // step))
    return [start + timedelta(seconds=step * i) for i in range(count)]


def fetch(sql: str, params: dict[str, Any] | list[Any]) -> list[tuple]:
    """Every row of one read-only query."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
