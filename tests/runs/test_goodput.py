"""Goodput on constructed runs: lost work, restart and checkpoint time, ETTR, by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runs.goodput import (
    CheckpointMark,
    Interruption,
    LostKind,
    by_queue_day,
    compute_goodput,
    first_busy,
)

T0 = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)


def at(hours: float = 0, minutes: float = 0) -> datetime:
    return T0 + timedelta(hours=hours, minutes=minutes)


def checkpoint(when: datetime, step: int, duration: float | None = 60.0) -> CheckpointMark:
    return CheckpointMark(ts=when, step=step, duration_seconds=duration)


CHECKPOINTS = [checkpoint(at(1), 100), checkpoint(at(2), 200), checkpoint(at(3), 300),
               checkpoint(at(5), 450), checkpoint(at(8), 700)]  # fmt: skip
INTERRUPTIONS = [
    Interruption(at(3, 40), "restart", "OOMKilled", resumed_at=at(3, 44)),
    Interruption(at(6, 30), "evicted", "Preempted by higher priority", resumed_at=at(7)),
]


def test_lost_work_is_crash_minus_preceding_checkpoint() -> None:
    goodput = compute_goodput(at(0), at(10), CHECKPOINTS, INTERRUPTIONS)
    first, second = goodput.crashes
    assert first.since == at(3) and first.since_checkpoint == CHECKPOINTS[2]
    assert first.lost_work_seconds == 40 * 60
    assert first.restart_seconds == 240
    # After the restart the last checkpoint is step 450 at 5 h: 1.5 h of work redone.
    assert second.since == at(5) and second.lost_work_seconds == 90 * 60
    assert second.restart_seconds == 30 * 60


def test_ettr_matches_a_hand_computation() -> None:
    goodput = compute_goodput(at(0), at(10), CHECKPOINTS, INTERRUPTIONS)
    wall = 10 * 3600
    redo, restart, writes = 2400 + 5400, 240 + 1800, 5 * 60
    assert goodput.wall_seconds == wall
    assert (goodput.redo_seconds, goodput.restart_seconds, goodput.checkpoint_seconds) == (
        redo,
        restart,
        writes,
    )
    assert goodput.lost_seconds == 10_140
    assert goodput.productive_seconds == 25_860
    assert goodput.ettr == pytest.approx(25_860 / 36_000, abs=1e-12)
    kinds = [(i.kind, i.start, i.end) for i in goodput.intervals if i.kind != LostKind.CHECKPOINT]
    assert kinds == [(LostKind.REDO, at(3), at(3, 40)), (LostKind.RESTART, at(3, 40), at(3, 44)),
                     (LostKind.REDO, at(5), at(6, 30)), (LostKind.RESTART, at(6, 30), at(7))]  # fmt: skip


def test_crash_before_any_checkpoint_loses_everything_since_start() -> None:
    goodput = compute_goodput(
        at(0), at(2), [], [Interruption(at(0, 50), "restart", resumed_at=at(1))]
    )
    assert goodput.crashes[0].since == at(0) and goodput.crashes[0].lost_work_seconds == 3000
    assert goodput.ettr == pytest.approx((7200 - 3000 - 600) / 7200)


def test_crash_while_restarting_extends_the_restart() -> None:
    interruptions = [Interruption(at(3, 40), "restart", resumed_at=at(3, 44)),
                     Interruption(at(3, 42), "restart", resumed_at=at(3, 50))]  # fmt: skip
    goodput = compute_goodput(at(0), at(4), CHECKPOINTS[:3], interruptions)
    assert [c.lost_work_seconds for c in goodput.crashes] == [2400, 0]
    assert goodput.restart_seconds == 240 + 360


def test_unknown_resume_counts_no_restart_and_failure_ends_the_run() -> None:
    goodput = compute_goodput(
        at(0), at(3, 40), CHECKPOINTS[:3], [Interruption(at(3, 40), "failed")]
    )
    assert goodput.redo_seconds == 2400 and goodput.restart_seconds == 0


def test_run_without_wall_time_has_no_ettr() -> None:
    assert compute_goodput(at(1), at(1), [], []).ettr is None


def test_by_queue_day_splits_at_midnight_and_weights_by_gpus() -> None:
    run = compute_goodput(at(-2), at(2), [checkpoint(at(-1), 10, None)],
                          [Interruption(at(-0.5), "restart", resumed_at=at(-0.5, 10))])  # fmt: skip
    day1, day2 = by_queue_day([("team-a", 16, run)], at(-24), at(24))
    assert (day1.queue, day1.day.isoformat(), day2.day.isoformat()) == (
        "team-a",
        "2026-03-01",
        "2026-03-02",
    )
    assert day1.wall_gpu_seconds == 7200 * 16 and day2.wall_gpu_seconds == 7200 * 16
    assert day1.lost_gpu_seconds[LostKind.REDO] == 1800 * 16
    assert day1.lost_gpu_seconds[LostKind.RESTART] == 600 * 16
    assert day1.ettr == pytest.approx((7200 - 2400) / 7200) and day2.ettr == 1.0


def test_first_busy_is_the_first_sample_at_threshold_after_the_crash() -> None:
    series = [
        (at(0, 1), 99.0),
        (at(0, 2), 0.0),
        (at(0, 3), None),
        (at(0, 4), 49.9),
        (at(0, 5), 50.0),
    ]
    assert first_busy(series, at(0, 1), 50.0) == at(0, 5)
    assert first_busy(series[:4], at(0, 1), 50.0) is None
