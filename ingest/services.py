"""Ingest cycles: pull a family's window from Prometheus and store it exactly once.

One cycle of one family: take the family's advisory lock (a second worker
skips), plan the window from the cursor (aligned to the step, ending a settle
delay before now, catching up any gap within Prometheus retention), split it
into chunks, and for each chunk ``pull`` (network, overlapped with storing the
previous chunk) then, in ONE transaction, ``store`` + rollup refresh + cursor
advance. A worker killed mid-cycle therefore leaves whole chunks behind and the
rerun continues from the cursor. After commit an ``ingest.committed`` event
goes to the live layer and the configured hooks.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction

from . import rollups
from .events import ingest_committed, publish_committed
from .health import record_cycle
from .models import Family, IngestCursor, IngestCycle, PrometheusOutage
from .outcome import CycleOutcome
from .prometheus import PrometheusClient, PrometheusError, PrometheusUnavailable
from .sources import source_for
from .sources.base import Batch, Source, Window

log = logging.getLogger(__name__)
LOCK_NAMESPACE = 0x1C57
#: The families a plain cycle runs, in order (topology before ib names the ports' leaves early).
DEFAULT_FAMILIES = [f.value for f in Family]
#: The error of a cycle a killed worker (or a hard time limit) left unfinished.
INTERRUPTED = "interrupted: the worker stopped mid-cycle (killed or past its hard time limit)"
Progress = Callable[[str, int, int], None]


def utcnow() -> datetime:
    """Now, UTC (one seam for tests)."""
    return datetime.now(UTC)


def align_down(moment: datetime, step: int) -> datetime:
    """``moment`` floored to a multiple of ``step`` seconds since the epoch."""
    seconds = int(moment.timestamp())
    return datetime.fromtimestamp(seconds - seconds % step, UTC)


@contextmanager
def family_lock(family: str, wait: float = 0.0) -> Iterator[bool]:
    """A session-level advisory lock per family; yields whether it was acquired within ``wait`` s."""
    key = DEFAULT_FAMILIES.index(family) if family in DEFAULT_FAMILIES else abs(hash(family)) % 1000
    deadline = time.monotonic() + wait
    while True:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_NAMESPACE, key])
            acquired = bool(cursor.fetchone()[0])
        if acquired or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, key])


def plan_window(
    family: str, since: datetime | None, until: datetime | None
) -> tuple[datetime, datetime]:
    """[start, end] to ingest: from ``since`` or the cursor (first run: the initial lookback)."""
    step, now = settings.INGEST_STEP_SECONDS, utcnow()
    end = align_down(until or now - timedelta(seconds=settings.INGEST_SETTLE_SECONDS), step)
    cursor = IngestCursor.objects.filter(family=family).first()
    if since is not None:
        start = since
    elif cursor is not None:
        start = cursor.covered_until
    else:
        start = end - timedelta(seconds=settings.INGEST_INITIAL_LOOKBACK_SECONDS)
    oldest = now - timedelta(days=settings.INGEST_PROMETHEUS_RETENTION_DAYS)
    return align_down(max(start, oldest), step), end


def split(start: datetime, end: datetime, step: int, chunk_steps: int) -> list[Window]:
    """Consecutive windows of at most ``chunk_steps`` steps covering (start, end]."""
    windows, width = [], timedelta(seconds=step * chunk_steps)
    while start < end:
        windows.append(Window(start, min(start + width, end), step))
        start = windows[-1].end
    return windows


def _commit_chunk(source: Source, batch: Batch) -> int:
    window = batch.window
    with transaction.atomic():
        rows = source.store(batch).rows
        rollups.refresh(source.family, window.start, window.end)
        cursor, created = IngestCursor.objects.select_for_update().get_or_create(
            family=source.family, defaults={"covered_until": window.end}
        )
        if not created and cursor.covered_until < window.end:
            cursor.covered_until = window.end
            cursor.save(update_fields=["covered_until"])
    return rows


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while chunks are pulled and stored.

    Decoded answers and rows are acyclic, so reference counting frees them; but
    their millions of small objects made every collection rescan the growing
    heap: with it on, decoding a 4,096-node cycle took twice the CPU.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_chunks(
    source: Source,
    client: PrometheusClient,
    windows: list[Window],
    outcome: CycleOutcome,
    progress: Progress | None,
    commit: Callable[[Source, Batch], int] = _commit_chunk,
) -> None:
    """Pull chunk i+1 in a thread while chunk i is stored (pull is network-only).

    ``commit`` stores one pulled chunk and advances its cursor in one transaction
    (default: the family cursor; ``ingest.shards`` passes the shard's).
    """
    with gc_paused(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-pull") as pool:
        pending: Future[Batch] = pool.submit(source.pull, client, windows[0])
        for index, window in enumerate(windows):
            batch = pending.result()
            if index == 0:
                close_outages()
            if index + 1 < len(windows):
                pending = pool.submit(source.pull, client, windows[index + 1])
            outcome.rows += commit(source, batch)
            outcome.skipped += batch.skipped
            for reason, count in batch.unfit.items():
                outcome.unfit[reason] = max(outcome.unfit.get(reason, 0), count)
            outcome.chunks += 1
            outcome.covered_until = window.end
            outcome.notes = sorted(set(outcome.notes) | set(batch.notes))
            if progress:
                progress(source.family, index + 1, len(windows))
            _pause_between_chunks()


def _pause_between_chunks() -> None:
    # Only tests/settings.py defines the setting: fault tests hold a worker between two
    # committed chunks to kill it mid-cycle. Production settings have no such knob.
    pause = getattr(settings, "INGEST_CHUNK_PAUSE_SECONDS", 0.0)
    if pause:
        time.sleep(pause)


def close_interrupted(family: str) -> int:
    """Record as failed the cycles of ``family`` a killed worker left unfinished.

    Only cycles older than the ingest queue's hard time limit: none of those can still run.
    """
    hard_limit = settings.TASK_TIME_LIMITS["ingest"][1]
    horizon = utcnow() - timedelta(seconds=hard_limit)
    return IngestCycle.objects.filter(
        family=family, finished_at__isnull=True, started_at__lt=horizon
    ).update(finished_at=utcnow(), error=INTERRUPTED)


def open_outage(detail: str) -> None:
    """Record that Prometheus is unreachable (one open outage at a time)."""
    if not PrometheusOutage.objects.filter(ended_at__isnull=True).exists():
        PrometheusOutage.objects.create(started_at=utcnow(), detail=detail[:2000])


def close_outages() -> None:
    """Prometheus answered: close the open outage, if any."""
    PrometheusOutage.objects.filter(ended_at__isnull=True).update(ended_at=utcnow())


def ingest_family(
    family: str,
    until: datetime | None = None,
    since: datetime | None = None,
    client: PrometheusClient | None = None,
    progress: Progress | None = None,
    publish: bool = True,
    lock_wait: float = 0.0,
) -> CycleOutcome:
    """Run one cycle of ``family`` up to ``until`` (default: now − settle delay).

    Another worker holding the family's lock makes this return status "locked"
    (after waiting up to ``lock_wait`` seconds): it never runs the same window twice at once.
    """
    outcome, started = CycleOutcome(family), time.monotonic()
    client = client or PrometheusClient()
    with family_lock(family, lock_wait) as acquired:
        if not acquired:
            outcome.status = "locked"
            return outcome
        outcome.window_start, outcome.window_end = plan_window(family, since, until)
        windows = split(
            outcome.window_start,
            outcome.window_end,
            settings.INGEST_STEP_SECONDS,
            settings.INGEST_CHUNK_STEPS,
        )
        close_interrupted(family)
        cycle = IngestCycle.objects.create(
            family=family,
            started_at=utcnow(),
            window_start=outcome.window_start,
            window_end=outcome.window_end,
        )
        try:
            if windows:
                run_chunks(source_for(family), client, windows, outcome, progress)
            else:
                outcome.status = "idle"
        except PrometheusUnavailable as exc:
            open_outage(str(exc))
            outcome.status, outcome.error = "error", str(exc)
        except PrometheusError as exc:
            outcome.status, outcome.error = "error", str(exc)
        except Exception as exc:  # noqa: BLE001 - one family's failure must not stop the others
            log.exception("ingest cycle of %s failed", family)
            outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"
        outcome.duration = time.monotonic() - started
        record_cycle(cycle, outcome)
    if publish and outcome.chunks:
        _publish_after_commit([outcome])
    return outcome


def ingest_all(
    until: datetime | None = None,
    since: datetime | None = None,
    client: PrometheusClient | None = None,
    families: list[str] | None = None,
    progress: Progress | None = None,
) -> list[CycleOutcome]:
    """One cycle of every family (or ``families``); one combined event after commit."""
    client = client or PrometheusClient()
    outcomes = [
        ingest_family(
            family, until=until, since=since, client=client, progress=progress, publish=False
        )
        for family in families or DEFAULT_FAMILIES
    ]
    _publish_after_commit([o for o in outcomes if o.chunks])
    return outcomes


def _publish_after_commit(outcomes: list[CycleOutcome]) -> None:
    if not outcomes:
        return
    covered = min(o.covered_until for o in outcomes if o.covered_until)
    event = ingest_committed(
        [o.family for o in outcomes], covered.isoformat(), sum(o.rows for o in outcomes)
    )
    transaction.on_commit(lambda: publish_committed(event))
