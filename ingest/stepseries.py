"""Pure arithmetic on step-aligned series (no Django, no network).

Range queries of the cluster families start one step before the window: the
point at ``start`` is the baseline that counter increases and state changes
are measured against, so every step in ``(start, end]`` gets an exact value no
matter how the windows are cut.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

Point = tuple[float, float]


def to_datetime(ts: float) -> datetime:
    """Unix seconds → aware UTC datetime."""
    return datetime.fromtimestamp(ts, tz=UTC)


def counter_increases(points: Sequence[Point], start: float) -> list[Point]:
    """The increase at each step after ``start`` of a counter sampled at those steps.

    A drop is a counter reset: the increase is the new value (counted from zero).
    A series first seen after the baseline is new: its value is its increase, since
    counters start at zero (Kueue creates its per-reason counters at the first event).
    A gap is bridged: the next value is compared with the last one seen.
    """
    increases: list[Point] = []
    previous: float | None = None
    for ts, value in points:
        if ts > start:
            if previous is None or value < previous:
                increases.append((ts, value))
            else:
                increases.append((ts, value - previous))
        previous = value
    return increases


def histogram_quantile(q: float, buckets: Iterable[tuple[float, float]]) -> float | None:
    """Prometheus's ``histogram_quantile`` over (upper bound, cumulative count) pairs.

    None where Prometheus answers NaN: no +Inf bucket, fewer than two buckets, or no
    observations. Non-monotonic counts (from scrape skew) are fixed as Prometheus does.
    """
    ordered = sorted(buckets)
    if len(ordered) < 2 or not math.isinf(ordered[-1][0]) or not 0 <= q <= 1:
        return None
    fixed: list[tuple[float, float]] = []
    running = 0.0
    for bound, count in ordered:
        running = max(running, count)
        fixed.append((bound, running))
    total = fixed[-1][1]
    if total <= 0:
        return None
    rank = q * total
    index = next((i for i, (_, c) in enumerate(fixed[:-1]) if c >= rank), len(fixed) - 1)
    if index == len(fixed) - 1:
        return fixed[-2][0]
    bound, count = fixed[index]
    if index == 0 and bound <= 0:
        return bound
    lower, below = fixed[index - 1] if index > 0 else (0.0, 0.0)
    return lower + (bound - lower) * (rank - below) / (count - below)


def continuous_runs(stamps: Iterable[float], step: float) -> list[tuple[float, float]]:
    """Group sorted step timestamps into (first, last) runs with no missing step."""
    runs: list[tuple[float, float]] = []
    for ts in sorted(set(stamps)):
        if runs and ts - runs[-1][1] <= step * 1.5:
            runs[-1] = (runs[-1][0], ts)
        else:
            runs.append((ts, ts))
    return runs


def changes(points: Iterable[tuple[float, str]]) -> list[tuple[float, str]]:
    """The points whose value differs from the one before (the first point always)."""
    kept: list[tuple[float, str]] = []
    for ts, value in sorted(points):
        if not kept or kept[-1][1] != value:
            kept.append((ts, value))
    return kept
