"""Small pure helpers shared by the rule families: grouping, streak starts, interval signals."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator
from datetime import UTC, datetime
from itertools import groupby
from typing import TypeVar

from .data import Assignment, Detail, Signal

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def group(points: Iterable[T], key: Callable[[T], K]) -> Iterator[tuple[K, list[T]]]:
    """Consecutive points with the same key (selectors return rows ordered by key, then ts)."""
    for k, items in groupby(points, key):
        yield k, list(items)


def streak_start(times: list[float], truth: list[bool], index: int, hold: float) -> float:
    """When the run of true points ending at ``index`` began."""
    i = index
    while i > 0 and truth[i - 1] and times[i] - times[i - 1] <= hold:
        i -= 1
    return times[i]


def intervals_signal(
    labels: dict[str, str],
    intervals: list[tuple[float, float | None]],
    describe: Callable[[int], Detail],
    extra: dict[str, str] | None = None,
) -> Signal:
    """A signal true over each [start, end) interval (end None: still true); intervals may overlap."""
    merged: list[tuple[float, float | None]] = []
    for start, end in sorted(intervals, key=lambda iv: iv[0]):
        last_end = merged[-1][1] if merged else 0.0
        if merged and (last_end is None or start <= last_end):
            merged[-1] = (
                merged[-1][0],
                None if end is None or last_end is None else max(last_end, end),
            )
        else:
            merged.append((start, end))
    times: list[float] = []
    truth: list[bool] = []
    for begin, finish in merged:
        times.append(begin)
        truth.append(True)
        if finish is not None:
            times.append(finish)
            truth.append(False)
    return Signal(labels, times, truth, math.inf, describe, extra or {})


def median(values: list[float]) -> float:
    """The median of a non-empty list."""
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def median_excluding(ordered: list[float], index: int) -> float:
    """The median of ``ordered`` (sorted) without the element at ``index``, in O(1)."""
    m = len(ordered) - 1
    half = m // 2
    # The k-th of the others is ordered[k] below ``index``, ordered[k + 1] from it on.
    upper = ordered[half] if half < index else ordered[half + 1]
    if m % 2:
        return upper
    lower = ordered[half - 1] if half - 1 < index else ordered[half]
    return (lower + upper) / 2


class Allocations:
    """Which run held a node at a time, from pod assignments (with a tolerance of one gap)."""

    def __init__(self, assignments: Iterable[Assignment], tolerance: float) -> None:
        self.by_node: dict[str, list[Assignment]] = {}
        for assignment in assignments:
            self.by_node.setdefault(assignment.node, []).append(assignment)
        self.tolerance = tolerance

    def at(self, node: str, ts: float) -> Assignment | None:
        """The assignment covering ``node`` at ``ts``, if any (the latest-starting one)."""
        best = None
        for assignment in self.by_node.get(node, ()):
            if assignment.start - self.tolerance <= ts <= assignment.end + self.tolerance:
                if best is None or assignment.start > best.start:
                    best = assignment
        return best


def iso(ts: float) -> str:
    """Unix seconds as an ISO-8601 UTC string (for alert context)."""
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def duration(seconds: float) -> str:
    """A short human duration: 45s, 12m, 3h05m."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
