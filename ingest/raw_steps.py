"""A range query's answer computed from raw samples (pure: no I/O, no ORM).

The GPU and IB families ask Prometheus ``max by (labels) (metric)``, ``max by (labels)
((a or b))`` and ``max by (labels) (timestamp(metric))`` at every step of a window. Read
through remote read instead (raw samples, stale markers kept: ``PrometheusClient.read_steps``),
the same answer is computed here as Prometheus' engine computes it, so everything after the
read (``normalize.fold``, ``ingest.sampling``) stores the same values:

* a series' value at step ``ts`` is its newest sample at or before ``ts`` no older than the
  lookback (Prometheus 2: ``t >= ts - lookback``; 3: ``t > ts - lookback``), absent when that
  sample is a staleness marker (promql/engine.go ``vectorSelectorSingle``);
* ``timestamp()`` of a selector is that sample's own time, in seconds;
* ``a or b`` keeps, at each step, every series of ``a`` and those of ``b`` whose labels other
  than ``__name__`` match no series of ``a`` at that step;
* ``max by`` groups the series by those labels (absent ones omitted) and keeps the largest
  value, a NaN giving way to any number (promql/engine.go ``aggregation``).

Queries of any other shape (an ``INGEST_PROMQL_OVERRIDES`` entry, the treydock rate join)
are not parsed (``step_query`` answers None) and go to ``query_range`` as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .remote_read import matchers

#: A raw series: its labels ((name, value), sorted by name, as remote read sends them) and
#: (ms, value) samples in time order; value None = a staleness marker.
KeptSeries = tuple[Sequence[tuple[str, str]], list[tuple[int, float | None]]]
_MAX_BY = re.compile(r"\s*max by \(([\w\s,]*)\) \((.*)\)\s*", re.DOTALL)
_TIMESTAMP = re.compile(r"\s*timestamp\((.*)\)\s*", re.DOTALL)
_EITHER = re.compile(r"\s*\((.*) or (.*)\)\s*", re.DOTALL)


@dataclass(frozen=True)
class StepQuery:
    """A parsed ``max by (by) (selector | (a or b) | timestamp(selector))``."""

    by: tuple[str, ...]
    selectors: tuple[str, ...]
    timestamps: bool = False


def step_query(promql: str) -> StepQuery | None:
    """The query's shape, or None when it is not one ``step_answer`` computes."""
    whole = _MAX_BY.fullmatch(promql)
    if whole is None:
        return None
    by = tuple(label.strip() for label in whole.group(1).split(",") if label.strip())
    inner, timestamps = whole.group(2), False
    if stamped := _TIMESTAMP.fullmatch(inner):
        inner, timestamps = stamped.group(1), True
    either = None if timestamps else _EITHER.fullmatch(inner)
    selectors = (either.group(1), either.group(2)) if either else (inner,)
    try:
        for selector in selectors:
            matchers(selector)
    except ValueError:
        return None
    return StepQuery(by, tuple(s.strip() for s in selectors), timestamps)


def grid(start_s: int, end_s: int, step_s: float) -> list[int]:
    """The evaluation times (ms) of a range query from ``start_s`` to ``end_s``."""
    step_ms, first, last = round(step_s * 1000), start_s * 1000, end_s * 1000
    return list(range(first, last + 1, step_ms))


def at_steps(
    samples: list[tuple[int, float | None]], times: Sequence[int], lookback_ms: int, closed: bool
) -> list[tuple[int, int, float]]:
    """(step, sample time, value) of one series at each step where it has a value."""
    out: list[tuple[int, int, float]] = []
    index, count = 0, len(samples)
    for ts in times:
        while index < count and samples[index][0] <= ts:
            index += 1
        if index == 0:
            continue
        t, value = samples[index - 1]
        oldest = ts - lookback_ms
        if value is None or t < oldest or (t == oldest and not closed):
            continue
        out.append((ts, t, value))
    return out


Pairs = tuple[tuple[str, str], ...]


def series_keys(
    pairs: Sequence[tuple[str, str]], by: Sequence[str], either: bool
) -> tuple[Pairs, Pairs]:
    """(``max by`` group key, identity for ``or``: every label but ``__name__``) of a series."""
    labels = dict(pairs)
    key = tuple([(label, labels[label]) for label in by if label in labels])
    return key, (tuple([p for p in pairs if p[0] != "__name__"]) if either else ())


def step_answer(
    query: StepQuery,
    raw: Sequence[Sequence[KeptSeries]],
    times: Sequence[int],
    lookback_ms: int,
    closed: bool,
    keys: Callable[[Sequence[tuple[str, str]]], tuple[Pairs, Pairs]] | None = None,
) -> list[dict[str, object]]:
    """The ``data.result`` Prometheus answers for ``query`` at ``times`` (ms), from the raw
    series of each of its selectors (``raw[i]`` for ``query.selectors[i]``). ``keys``: what
    ``series_keys`` gives for a series' labels (a caller may cache it)."""
    groups: dict[tuple[tuple[str, str], ...], dict[int, float]] = {}
    taken: set[tuple[tuple[tuple[str, str], ...], int]] = set()
    shared: set[tuple[tuple[str, str], ...]] = set()
    by, either = query.by, len(raw) > 1
    for position, series_list in enumerate(raw):
        seen_here: set[tuple[tuple[tuple[str, str], ...], int]] = set()
        for pairs, samples in series_list:
            key, identity = keys(pairs) if keys else series_keys(pairs, by, either)
            at = groups.get(key)
            if at is None:
                at = groups[key] = {}
            elif at:
                shared.add(key)  # two series in one group: its steps may come out of order
            for ts, t, value in at_steps(samples, times, lookback_ms, closed):
                if either:
                    if position and (identity, ts) in taken:
                        continue  # ``a or b``: a's series wins at this step
                    seen_here.add((identity, ts))
                number = t / 1000 if query.timestamps else value
                old = at.get(ts)
                if old is None or old < number or old != old:  # noqa: PLR0124 - NaN gives way
                    at[ts] = number
        taken |= seen_here
    return [
        {
            "metric": dict(key),
            "values": [(ts / 1000, at[ts]) for ts in (sorted(at) if key in shared else at)],
        }
        for key, at in groups.items()
        if at
    ]
