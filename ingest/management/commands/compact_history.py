"""``python manage.py compact_history``: compact every hot hour past the hot window, with a progress bar.

Converts an existing database in place (migration 0014 only creates the tables): each hour
commits on its own, so an interrupted run loses at most one hour of work and the next run
(or the beat task) resumes there.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ingest.compaction import compact, hours_pending

BAR_WIDTH = 30


def bar(label: str, done: int, total: int) -> str:
    """``[#####.....]  12/240 hours  ingest_gpusample 2026-01-05 03:00``."""
    filled = BAR_WIDTH * done // max(total, 1)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done:>5}/{total} hours  {label}"


class Command(BaseCommand):
    help = "Compact raw GPU / IB sample hours older than INGEST_HOT_HOURS into compacted history."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--budget",
            type=float,
            default=float("inf"),
            help="stop starting new hours after this many seconds (default: run to the end)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        before = hours_pending()
        self.stdout.write(
            "pending: " + ", ".join(f"{table} {hours} h" for table, hours in before.items())
        )
        tty = sys.stdout.isatty()

        def progress(label: str, done: int, total: int) -> None:
            line = bar(label, done, total)
            self.stdout.write(f"\r{line}" if tty else line, ending="" if tty else "\n")

        report = compact(budget_seconds=options["budget"], progress=progress)
        if tty:
            self.stdout.write("")
        self.stdout.write(
            f"compacted {report.hours} hours ({report.rows:,} rows, {report.leftover:,} left hot) "
            f"in {report.seconds:.1f} s; truncated {len(report.days_finished)} day partitions; "
            f"{report.pending_hours} hours left"
        )
