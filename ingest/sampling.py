"""Per-step values from samples taken at any scrape interval (pure: no I/O, no ORM).

A range query answers, at every ingest step, the newest sample within the
backend's lookback: an exporter scraped every 60 s at a 30 s step answers the
same sample twice, one scraped every 15 s answers every other one. Differencing
those values over the step reads as 0 then 2x (slow scrapes) and is only right
when the scrape interval divides the step. So each family also asks, per scrape
unit (a node's exporter; one treydock HCA), ``timestamp()`` of one of its metrics:
the time its newest sample was really taken. With it, at each step ``ts`` a unit is

* **fresh** — a sample newer than the previous step's: a counter's value is its
  increase since the previous step's sample divided by the time between the two
  samples (their own timestamps, not the step), resets handled as before;
* **carried** — still the previous step's sample, not older than the unit's scrape
  interval: counters keep the previous step's value (the rate of the newest pair
  of samples, marked by nothing but documented: docs/scaling.md "Scrape intervals"),
  gauges the sample's value. A 60 s scrape at a 30 s step gives the same, correct
  rate on both steps; an increase column holds rate x step, so the increase between
  two samples is spread over the steps they span and sums are kept;
* **stale** — no sample, or the newest is at least one of the unit's scrape intervals
  old (where Prometheus, scraping live, would have written its staleness marker): every
  value is NULL. A target that vanished is a gap from one interval after its last
  sample, not forward-filled through the backend's 5-minute lookback (backfilled blocks,
  remote-written or federated data carry no staleness markers).

A unit's scrape interval is the spacing of its two newest samples seen at or
before the step (the timestamps are known from ``2 x INGEST_MAX_SCRAPE_INTERVAL_SECONDS``
before the window: read with the window, or kept from the previous window of the same query,
``sources.base.fetch_sampling``); a unit with one sample in view uses that maximum instead.
Without timestamps (the query failed or the unit has none) every value is computed
as before, over the step.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from .normalize import Collected, Column, Folded

#: The pseudo-column that holds each unit's sample time (``timestamp()``) per step.
SAMPLED_AT = "sampled_at"
#: A unit whose newest sample is the previous step's (its value is carried).
CARRIED = 0.0
#: A unit seen for the first time (gauges are read, counters have no previous value).
NEW = -1.0
_NOTHING: Mapping[Hashable, float] = {}
CarryIn = Callable[[], Mapping[str, Mapping[Any, float]]]


@dataclass
class Sampling:
    """Each unit's sample times per step (``at``: ts → unit → unix seconds)."""

    at: Folded
    step: int
    max_interval: float
    #: unit → sample time → the sample time before it (built on first use).
    _before: dict[Hashable, dict[float, float]] = field(default_factory=dict, repr=False)
    #: every unit seen in ``at`` (built with ``_before``)
    units: set[Hashable] = field(default_factory=set, init=False, repr=False)

    @classmethod
    def of(cls, at: Folded, step: int) -> Sampling | None:
        """The sampling of ``at`` under INGEST_MAX_SCRAPE_INTERVAL_SECONDS (None: no samples)."""
        return cls(at, step, float(settings.INGEST_MAX_SCRAPE_INTERVAL_SECONDS)) if at else None

    def __post_init__(self) -> None:
        last: dict[Hashable, float] = {}
        for ts in sorted(self.at):
            for unit, when in self.at[ts].items():
                previous = last.get(unit)
                if previous is None or when > previous:
                    if previous is not None:
                        self._before.setdefault(unit, {})[when] = previous
                    last[unit] = when
        self.units = set(last)

    def interval(self, unit: Hashable, when: float) -> float | None:
        """The spacing between the sample at ``when`` and the one before it, if seen."""
        previous = self._before.get(unit, {}).get(when)
        return None if previous is None else when - previous

    def states(self, units: Sequence[Hashable], ts: int) -> list[float | None]:
        """Per unit at step ``ts``: seconds since its previous sample (fresh), ``CARRIED``,
        ``NEW``, or None (stale). Units without any sample time get the step (as before)."""
        now, before, step = (
            self.at.get(ts, _NOTHING),
            self.at.get(ts - self.step, _NOTHING),
            self.step,
        )
        known, out = self.units, []
        for unit in units:
            when = now.get(unit)
            if when is None:
                out.append(None if unit in known else float(step))
                continue
            interval = self.interval(unit, when)
            limit = self.max_interval if interval is None else interval
            if ts - when >= limit:
                out.append(None)
                continue
            previous = before.get(unit)
            if previous is None or when < previous:
                out.append(NEW)
            elif when == previous:
                out.append(CARRIED)
            else:
                out.append(round((when - previous) * 1000) / 1000)
        return out

    def detected(self) -> float | None:
        """The median spacing between consecutive samples of all units (None if none seen)."""
        spacings = sorted(
            when - previous for pairs in self._before.values() for when, previous in pairs.items()
        )
        return spacings[len(spacings) // 2] if spacings else None


class Stepper:
    """Stored values of each column at each step, computed in time order.

    ``units`` gives, per column, the scrape unit of each key (the same list object
    for columns that share them: their states are computed once per step).
    ``carry_in`` is asked, only when a key is carried at the first step, for the
    values stored at the step before the window (column → key → stored value).
    """

    def __init__(  # noqa: D107
        self,
        collected: Collected,
        keys: Sequence[Hashable],
        step: int,
        sampling: Sampling | None = None,
        units: Callable[[str], Sequence[Hashable]] | None = None,
        carry_in: CarryIn | None = None,
    ) -> None:
        self.collected, self.keys, self.step = collected, keys, step
        self.sampling, self.units, self.carry_in = sampling, units, carry_in
        self._previous: dict[str, list[float | None]] = {}
        self._states: dict[tuple[int, int], list[float | None]] = {}
        self._carried: Mapping[str, Mapping[Any, float]] | None = None
        self._flat: list[float | None] = [float(step)] * len(keys)

    def states(self, column: str, ts: int) -> list[float | None]:
        """Per key of ``column`` at ``ts``: see ``Sampling.states``."""
        if self.sampling is None or self.units is None:
            return self._flat
        units = self.units(column)
        cached = self._states.get((id(units), ts))
        if cached is None:
            if len(self._states) > 8:
                self._states.clear()
            cached = self._states[(id(units), ts)] = self.sampling.states(units, ts)
        return cached

    def _previous_values(self, column: Column, ts: int) -> list[float | None]:
        previous = self._previous.get(column.name)
        if previous is not None:
            return previous
        if self.carry_in is None or CARRIED not in self.states(column.name, ts):
            return [None] * len(self.keys)
        if self._carried is None:
            self._carried = self.carry_in()
        stored = self._carried.get(column.name, _NOTHING)
        return [stored.get(key) for key in self.keys]

    def carry_out(self, columns: Sequence[str]) -> dict[str, dict[Hashable, float]]:
        """The last step's values of ``columns`` (column → key → value), for the next window."""
        return {
            name: {
                k: v for k, v in zip(self.keys, self._previous[name], strict=True) if v is not None
            }
            for name in columns
            if name in self._previous
        }

    def values(self, column: Column, ts: int) -> list[float | None]:
        """``column``'s stored value per key at step ``ts`` (call in ascending ``ts``).

        A gauge is its sample's value unless stale. A counter's increase is
        ``value - previous`` (``value`` after a reset), unknown without a previous
        value or when pegged at ``column.pegged``; a ``rate`` divides it by the
        seconds between the two samples, an ``increase`` scales it to the step.
        """
        folded = self.collected.columns.get(column.name, {})
        now, states = folded.get(ts, _NOTHING), self.states(column.name, ts)
        if column.kind == "gauge":
            return [
                None if state is None else now.get(key)
                for key, state in zip(self.keys, states, strict=True)
            ]
        before, pegged, step = folded.get(ts - self.step, _NOTHING), column.pegged, self.step
        previous = self._previous_values(column, ts)
        rate = column.kind == "rate"
        out = [
            None
            if state is None or state == NEW or (value := now.get(key)) is None or value == pegged
            else carried
            if state == CARRIED
            else None
            if (last := before.get(key)) is None
            else ((value - last if value >= last else value) / state)
            if rate
            else (value - last if value >= last else value) * (step / state)
            for key, state, carried in zip(self.keys, states, previous, strict=True)
        ]
        self._previous[column.name] = out
        return out
