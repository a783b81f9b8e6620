"""Checkpoint advisor: Young/Daly optimal intervals and expected waste. Pure functions, no ORM.

δ = checkpoint write time, M = mean time between failures of the job (docs/domain.md,
"Checkpoints and goodput"):

* Young: T = sqrt(2δM);
* Daly: T = sqrt(2δM)·(1 + (1/3)·sqrt(δ/(2M)) + (1/9)·(δ/(2M))) − δ for δ < 2M, and T = M for δ ≥ 2M;
* expected waste of an interval T ≈ δ/T + T/(2M).

M is observed from crashes of runs of *similar size*: runs whose GPU count is within a factor
``SIMILAR_FACTOR`` of this run's (bigger jobs fail more often, so a 64-GPU run's history says little
about a 4,096-GPU one).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

SIMILAR_FACTOR = 2.0
#: A current interval within this fraction of the optimum is reported as "close to optimal".
CLOSE_ENOUGH = 0.1


def young_interval(delta: float, mtbf: float) -> float:
    """Young's optimal checkpoint interval, seconds."""
    return math.sqrt(2.0 * delta * mtbf)


def daly_interval(delta: float, mtbf: float) -> float:
    """Daly's higher-order optimal checkpoint interval, seconds (T = M when δ ≥ 2M)."""
    if delta >= 2.0 * mtbf:
        return mtbf
    ratio = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1.0 + math.sqrt(ratio) / 3.0 + ratio / 9.0) - delta


def expected_waste(interval: float, delta: float, mtbf: float) -> float:
    """Fraction of time lost to checkpoint writes and redone work: δ/T + T/(2M)."""
    return delta / interval + interval / (2.0 * mtbf)


def is_similar(gpus: int, other_gpus: int, factor: float = SIMILAR_FACTOR) -> bool:
    """Runs are of similar size when their GPU counts are within ``factor`` of each other."""
    if gpus <= 0 or other_gpus <= 0:
        return gpus == other_gpus
    return gpus / factor <= other_gpus <= gpus * factor


def observed_mtbf(exposure_seconds: float, crashes: int) -> float | None:
    """Run-time per crash over a population of runs; None when nothing crashed."""
    return exposure_seconds / crashes if crashes > 0 else None


def median_interval(checkpoint_times: Sequence[datetime]) -> float | None:
    """The median gap between consecutive checkpoints, seconds (None with fewer than two)."""
    ordered = sorted(checkpoint_times)
    gaps = [(b - a).total_seconds() for a, b in zip(ordered, ordered[1:], strict=False)]
    gaps = [gap for gap in gaps if gap > 0]
    return statistics.median(gaps) if gaps else None


@dataclass(frozen=True)
class Advice:
    """The advisor's figures for one run and the sentence that states them."""

    similar_runs: int
    crashes: int
    exposure_seconds: float
    mtbf_seconds: float | None
    checkpoint_seconds: float | None
    current_interval_seconds: float | None
    young_seconds: float | None
    daly_seconds: float | None
    current_waste: float | None
    optimal_waste: float | None
    summary: str


def format_duration(seconds: float) -> str:
    """45 min, 2.5 h, 40 s: the unit a person would say."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_percent(fraction: float) -> str:
    """9%, 0.4%: whole percent unless that would round to nothing."""
    percent = 100.0 * fraction
    return f"{percent:.1f}%" if percent < 1 else f"{percent:.0f}%"


def _summary(
    current: float | None, optimal: float, current_waste: float | None, optimal_waste: float
) -> str:
    if current is None or current_waste is None:
        return (
            f"optimal interval {format_duration(optimal)} "
            f"(expected waste {format_percent(optimal_waste)}); too few checkpoints to compare"
        )
    if abs(current - optimal) <= CLOSE_ENOUGH * optimal:
        return (
            f"checkpointing every {format_duration(current)}, close to the optimal "
            f"{format_duration(optimal)} (expected waste {format_percent(current_waste)})"
        )
    return (
        f"checkpointing every {format_duration(current)}; {format_duration(optimal)} would cut "
        f"expected waste from {format_percent(current_waste)} to {format_percent(optimal_waste)}"
    )


def advise(
    *,
    checkpoint_durations: Sequence[float],
    checkpoint_times: Sequence[datetime],
    similar_runs: int,
    exposure_seconds: float,
    crashes: int,
) -> Advice:
    """Compare a run's checkpoint cadence with the Young/Daly optimum for its observed MTBF."""
    mtbf = observed_mtbf(exposure_seconds, crashes)
    delta = statistics.median(checkpoint_durations) if checkpoint_durations else None
    current = median_interval(checkpoint_times)
    base = {
        "similar_runs": similar_runs,
        "crashes": crashes,
        "exposure_seconds": exposure_seconds,
        "mtbf_seconds": mtbf,
        "checkpoint_seconds": delta,
        "current_interval_seconds": current,
    }
    if delta is None or delta <= 0 or mtbf is None:
        reason = (
            f"no crashes among {similar_runs} similar runs over {format_duration(exposure_seconds)}: MTBF unknown"
            if mtbf is None
            else "no checkpoint write durations recorded"
        )
        return Advice(**base, young_seconds=None, daly_seconds=None, current_waste=None,
                      optimal_waste=None, summary=reason)  # fmt: skip
    young, daly = young_interval(delta, mtbf), daly_interval(delta, mtbf)
    optimal_waste = expected_waste(daly, delta, mtbf)
    current_waste = expected_waste(current, delta, mtbf) if current else None
    summary = _summary(current, daly, current_waste, optimal_waste)
    if delta >= 2 * mtbf:
        summary = (
            f"checkpoint writes ({format_duration(delta)}) take longer than half the MTBF; "
            + summary
        )
    return Advice(**base, young_seconds=young, daly_seconds=daly, current_waste=current_waste,
                  optimal_waste=optimal_waste, summary=summary)  # fmt: skip
