"""Pure normalisation: decoded Prometheus series → per-step rows (no I/O, no ORM).

Every answer is a step-aligned ``query_range`` from the window start (the
context point) to its end. Series are grouped by a key (node + gpu, or node +
device + port); duplicates of one key (the same GPU scraped through two
targets) collapse to their max. Gauges are read at each step; counters become
the exact increase over the step from two consecutive values, with resets
handled like Prometheus (a drop means the counter restarted from 0) and a
32-bit counter pegged at 4294967295 reported as unknown (None) plus a flag,
never as 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from .prometheus import Answer

SATURATED_32 = 4294967295.0
Points = dict[float, float]


@dataclass
class Collected:
    """Values of one chunk: key → column → {unix ts: value}; plus the points skipped."""

    values: dict[Hashable, dict[str, Points]] = field(default_factory=dict)
    skipped: int = 0

    def add(
        self, column: str, answer: Answer, key_of: Callable[[Mapping[str, str]], Hashable | None]
    ) -> None:
        """Merge one metric's answer; series whose key cannot be derived are skipped."""
        self.skipped += answer.skipped
        for series in answer.series:
            key = key_of(series.labels)
            if key is None:
                self.skipped += len(series.points)
                continue
            columns = self.values.setdefault(key, {})
            existing = columns.get(column)
            if existing is None:
                columns[column] = dict(series.points)
            else:
                for ts, value in series.points:
                    if value > existing.get(ts, -float("inf")):
                        existing[ts] = value


def steps(start: int, end: int, step: int) -> list[int]:
    """The step timestamps a window covers: ``start < ts <= end``."""
    return list(range(start + step, end + 1, step))


def increase(points: Points, ts: int, step: int) -> float | None:
    """Counter increase over the step ending at ``ts`` (None if unknown or saturated)."""
    value = points.get(ts)
    if value is None or value == SATURATED_32:
        return None
    previous = points.get(ts - step)
    if previous is None:
        return None
    return value - previous if value >= previous else value


def rate(points: Points, ts: int, step: int) -> float | None:
    """Per-second rate of a counter over the step ending at ``ts``."""
    delta = increase(points, ts, step)
    return None if delta is None else delta / step


def saturated(points: Points | None, ts: int) -> bool:
    """Whether a 32-bit counter sits at its maximum at ``ts``."""
    return points is not None and points.get(ts) == SATURATED_32


@dataclass(frozen=True)
class Column:
    """How one stored column is computed: ``gauge``, ``rate`` or ``increase`` of a source metric."""

    name: str
    kind: str
    saturation_bit: int = 0


def row_values(columns: Mapping[str, Points], spec: Iterable[Column], ts: int, step: int) -> list:
    """The stored values of one key at one step, in ``spec`` order (None where missing)."""
    out: list[float | None] = []
    for column in spec:
        points = columns.get(column.name)
        if points is None:
            out.append(None)
        elif column.kind == "gauge":
            out.append(points.get(ts))
        elif column.kind == "rate":
            out.append(rate(points, ts, step))
        else:
            out.append(increase(points, ts, step))
    return out


def saturation_mask(columns: Mapping[str, Points], spec: Iterable[Column], ts: int) -> int:
    """Bitmask of the columns whose 32-bit counter is pegged at ``ts``."""
    mask = 0
    for column in spec:
        if column.saturation_bit and saturated(columns.get(column.name), ts):
            mask |= column.saturation_bit
    return mask


def int_label(labels: Mapping[str, str], name: str) -> int | None:
    """An integer label value (gpu, port), or None when absent or not a number."""
    try:
        return int(labels[name])
    except (KeyError, ValueError):
        return None


_HCA = re.compile(r"^(?P<node>\S+)\s+(?:HCA|hca|mlx5)[-_]?(?P<index>\d+)$")


def split_hca(hca: str) -> tuple[str, str] | None:
    """``"gpu-017 HCA-1"`` → ``("gpu-017", "mlx5_0")``: the node and its device name.

    treydock names HCAs by node description; HCA-N is the N-th adapter, which
    the kernel (and node_exporter) calls mlx5_{N-1}, so both dialects name the
    same port the same way.
    """
    match = _HCA.match(hca.strip())
    if match is None:
        node, _, rest = hca.strip().partition(" ")
        return (node, rest or "mlx5_0") if node else None
    return match["node"], f"mlx5_{int(match['index']) - 1}"


def xid_events(
    tracks: list[tuple[str, Points]], times: list[int], previous: int | None
) -> list[tuple[int, int, str]]:
    """New or changed XID codes of one GPU as (ts, code, message).

    ``times[0]`` is the window start: its value is context only. DCGM's gauge is
    sticky, so only a value not present at the previous step and different from
    the current code is an event; ``previous`` (the last stored event's code) is
    the current code when the window has no context point. Code 0 is "no error".
    """
    events: list[tuple[int, int, str]] = []
    current, before = previous, set[int]()
    for index, ts in enumerate(times):
        present = {int(pts[ts]): msg for msg, pts in tracks if ts in pts}
        fresh = set(present) - before - {current}
        if fresh:
            code = max(fresh)
            if index > 0 and code != 0:
                events.append((ts, code, present[code]))
            current = code
        elif present and current not in present:
            current = min(present)
        before = set(present)
    return events
