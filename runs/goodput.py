"""Goodput of training runs: ETTR and where the lost time went. Pure functions, no ORM.

A run's wall time is split into productive time and three kinds of lost time (docs/domain.md, "Checkpoints and goodput"):

* **redo**: work since the last checkpoint, thrown away by an interruption (crash, eviction,
  preemption, failure) and done again after the restart: ``[last checkpoint (or resume), crash]``;
* **restart**: from the interruption until the run's GPUs are busy again: ``[crash, resume]``;
* **checkpoint**: checkpoint writes, ``[ts - duration, ts]`` of each checkpoint.

ETTR = productive / wall. Lost time is kept as intervals so it can be shaded on a timeline and
split by day for the cluster-wide view.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum


class LostKind(StrEnum):
    """Why an interval of a run's wall time was not productive."""

    REDO = "redo"
    RESTART = "restart"
    CHECKPOINT = "checkpoint"


@dataclass(frozen=True)
class CheckpointMark:
    """A completed checkpoint: when it finished and how long the write took (if known)."""

    ts: datetime
    step: int
    duration_seconds: float | None = None


@dataclass(frozen=True)
class Interruption:
    """A crash, eviction, preemption or failure, and when the run was productive again (if ever)."""

    ts: datetime
    kind: str
    detail: str = ""
    resumed_at: datetime | None = None


@dataclass(frozen=True)
class LostInterval:
    """A stretch of lost time."""

    start: datetime
    end: datetime
    kind: LostKind

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass(frozen=True)
class CrashLoss:
    """What one interruption cost: work since ``since`` redone, and the restart."""

    interruption: Interruption
    since: datetime
    since_checkpoint: CheckpointMark | None
    lost_work_seconds: float
    restart_start: datetime
    restart_seconds: float

    @property
    def crash_at(self) -> datetime:
        """The interruption time, clipped to the run's life."""
        return self.since + timedelta(seconds=self.lost_work_seconds)

    @property
    def resumed_at(self) -> datetime:
        return self.restart_start + timedelta(seconds=self.restart_seconds)


@dataclass(frozen=True)
class Goodput:
    """A run's wall time, productive time and lost time by kind."""

    start: datetime
    end: datetime
    redo_seconds: float
    restart_seconds: float
    checkpoint_seconds: float
    intervals: tuple[LostInterval, ...] = ()
    crashes: tuple[CrashLoss, ...] = ()

    @property
    def wall_seconds(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds())

    @property
    def lost_seconds(self) -> float:
        return self.redo_seconds + self.restart_seconds + self.checkpoint_seconds

    @property
    def productive_seconds(self) -> float:
        return max(0.0, self.wall_seconds - self.lost_seconds)

    @property
    def ettr(self) -> float | None:
        """Effective training time ratio; None for a run with no wall time yet."""
        wall = self.wall_seconds
        return self.productive_seconds / wall if wall > 0 else None


def _clip(start: datetime, end: datetime, lo: datetime, hi: datetime) -> tuple[datetime, datetime]:
    return max(start, lo), min(end, hi)


def _last_checkpoint(
    checkpoints: Sequence[CheckpointMark], after: datetime, until: datetime
) -> CheckpointMark | None:
    """The newest checkpoint completed in ``[after, until]``."""
    found = None
    for checkpoint in checkpoints:
        if after <= checkpoint.ts <= until:
            found = checkpoint
    return found


def _crash_losses(
    start: datetime,
    end: datetime,
    checkpoints: Sequence[CheckpointMark],
    interruptions: Iterable[Interruption],
) -> list[CrashLoss]:
    losses: list[CrashLoss] = []
    anchor = start  # unsaved work accumulates from here: the run's start or the last resume
    for interruption in sorted(interruptions, key=lambda i: i.ts):
        crash = min(max(interruption.ts, start), end)
        resumed = min(interruption.resumed_at or crash, end)
        if crash < anchor:  # interrupted again while still restarting: the restart just grows
            restart_from = anchor
            since, checkpoint = anchor, None
        else:
            checkpoint = _last_checkpoint(checkpoints, anchor, crash)
            since = checkpoint.ts if checkpoint else anchor
            restart_from = crash
        restart_end = max(resumed, restart_from)
        losses.append(
            CrashLoss(
                interruption=interruption,
                since=since,
                since_checkpoint=checkpoint,
                lost_work_seconds=max(0.0, (crash - since).total_seconds()),
                restart_start=restart_from,
                restart_seconds=(restart_end - restart_from).total_seconds(),
            )
        )
        anchor = max(anchor, restart_end)
    return losses


def compute_goodput(
    start: datetime,
    end: datetime,
    checkpoints: Sequence[CheckpointMark],
    interruptions: Iterable[Interruption],
) -> Goodput:
    """Split a run's wall time ``[start, end]`` into productive and lost time."""
    end = max(start, end)
    ordered = sorted(checkpoints, key=lambda c: c.ts)
    losses = _crash_losses(start, end, ordered, interruptions)
    intervals: list[LostInterval] = []
    for loss in losses:
        if loss.lost_work_seconds > 0:
            intervals.append(LostInterval(loss.since, loss.crash_at, LostKind.REDO))
        if loss.restart_seconds > 0:
            intervals.append(LostInterval(loss.restart_start, loss.resumed_at, LostKind.RESTART))
    for checkpoint in ordered:
        if checkpoint.duration_seconds:
            lo, hi = _clip(
                checkpoint.ts - timedelta(seconds=checkpoint.duration_seconds),
                checkpoint.ts,
                start,
                end,
            )
            if hi > lo:
                intervals.append(LostInterval(lo, hi, LostKind.CHECKPOINT))
    totals: dict[LostKind, float] = defaultdict(float)
    for interval in intervals:
        totals[interval.kind] += interval.seconds
    return Goodput(
        start=start,
        end=end,
        redo_seconds=totals[LostKind.REDO],
        restart_seconds=totals[LostKind.RESTART],
        checkpoint_seconds=totals[LostKind.CHECKPOINT],
        intervals=tuple(sorted(intervals, key=lambda i: i.start)),
        crashes=tuple(losses),
    )


def _overlap_seconds(start: datetime, end: datetime, lo: datetime, hi: datetime) -> float:
    a, b = _clip(start, end, lo, hi)
    return max(0.0, (b - a).total_seconds())


def _days(start: datetime, end: datetime) -> Iterable[tuple[date, datetime, datetime]]:
    day = start.astimezone(UTC).date()
    while True:
        lo = datetime.combine(day, time(), tzinfo=UTC)
        if lo >= end:
            return
        yield day, lo, lo + timedelta(days=1)
        day += timedelta(days=1)


@dataclass
class QueueDay:
    """GPU-weighted goodput of one queue on one UTC day."""

    queue: str
    day: date
    wall_gpu_seconds: float = 0.0
    lost_gpu_seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(LostKind, 0.0))

    @property
    def productive_gpu_seconds(self) -> float:
        return max(0.0, self.wall_gpu_seconds - sum(self.lost_gpu_seconds.values()))

    @property
    def ettr(self) -> float | None:
        return (
            self.productive_gpu_seconds / self.wall_gpu_seconds if self.wall_gpu_seconds else None
        )


def by_queue_day(
    runs: Iterable[tuple[str, int, Goodput]], window_start: datetime, window_end: datetime
) -> list[QueueDay]:
    """Cluster-wide goodput per (queue, UTC day) from ``(queue, gpus, goodput)`` of each run."""
    table: dict[tuple[str, date], QueueDay] = {}
    for queue, gpus, run in runs:
        lo, hi = _clip(run.start, run.end, window_start, window_end)
        for day, day_lo, day_hi in _days(lo, hi):
            wall = _overlap_seconds(lo, hi, day_lo, day_hi)
            if wall <= 0:
                continue
            row = table.setdefault((queue, day), QueueDay(queue, day))
            row.wall_gpu_seconds += wall * gpus
            for interval in run.intervals:
                seconds = _overlap_seconds(
                    interval.start, interval.end, max(lo, day_lo), min(hi, day_hi)
                )
                row.lost_gpu_seconds[interval.kind] += seconds * gpus
    return sorted(table.values(), key=lambda r: (r.queue, r.day))


def first_busy(
    series: Sequence[tuple[datetime, float | None]], after: datetime, threshold: float
) -> datetime | None:
    """The first sample strictly after ``after`` at or above ``threshold`` (the resume after a crash)."""
    for ts, level in series:
        if ts > after and level is not None and level >= threshold:
            return ts
    return None
