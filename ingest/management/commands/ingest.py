"""``manage.py ingest``: one synchronous cycle up to now, or a backfill with ``--since``."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.gc_tuning import tune_gc
from ingest.models import Family
from ingest.outcome import CycleOutcome
from ingest.services import DEFAULT_FAMILIES, ingest_family, utcnow

_DURATION = re.compile(r"^(\d+)([smhd])$")
#: A cycle already running (beat) is waited for rather than skipped.
LOCK_WAIT_SECONDS = 120.0
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_moment(text: str, now: datetime) -> datetime:
    """``6h`` / ``30m`` / ``2d`` ago, or an ISO 8601 time (UTC if no zone)."""
    match = _DURATION.match(text.strip())
    if match:
        return now - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"{text!r}: expected a duration like 6h or an ISO 8601 time") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class ProgressBar:
    """A one-line text progress bar per family on stderr."""

    def __init__(self, width: int = 30) -> None:
        self.width = width

    def __call__(self, family: str, done: int, total: int) -> None:
        filled = self.width * done // max(total, 1)
        bar = "#" * filled + "-" * (self.width - filled)
        sys.stderr.write(f"\r{family:<12} [{bar}] {done}/{total} chunks")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


class Command(BaseCommand):
    help = "Ingest every family (or --family) from Prometheus up to now; --since backfills."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="start of a backfill: 6h, 30m, 2d or an ISO time")
        parser.add_argument("--until", help="end instead of now: a duration ago or an ISO time")
        parser.add_argument(
            "--family", default="", help=f"comma-separated: {','.join(Family.values)}"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tune_gc()  # as a worker does (core.gc_tuning)
        now = utcnow()
        families = [
            f.strip() for f in options["family"].split(",") if f.strip()
        ] or DEFAULT_FAMILIES
        unknown = sorted(set(families) - set(Family.values))
        if unknown:
            raise CommandError(
                f"unknown family {', '.join(unknown)}; expected {', '.join(Family.values)}"
            )
        since = parse_moment(options["since"], now) if options["since"] else None
        until = parse_moment(options["until"], now) if options["until"] else None
        progress = ProgressBar() if since else None
        outcomes = [
            ingest_family(
                f, until=until, since=since, progress=progress, lock_wait=LOCK_WAIT_SECONDS
            )
            for f in families
        ]
        for outcome in outcomes:
            self.stdout.write(self.summary(outcome))
        if any(o.status == "error" for o in outcomes):
            raise CommandError("some families failed (see above)")

    def summary(self, outcome: CycleOutcome) -> str:
        """One line per family: status, window, rows, skipped, duration, error."""
        window = (
            f"{outcome.window_start:%Y-%m-%d %H:%M:%S} → {outcome.window_end:%H:%M:%S}"
            if outcome.window_start and outcome.window_end
            else "-"
        )
        line = (
            f"{outcome.family:<12} {outcome.status:<6} {window}  rows={outcome.rows} "
            f"skipped={outcome.skipped} chunks={outcome.chunks} {outcome.duration:.1f}s"
        )
        return (
            line
            + (f"  {' '.join(outcome.notes)}" if outcome.notes else "")
            + (f"\n  error: {outcome.error}" if outcome.error else "")
        )
