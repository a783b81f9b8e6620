"""What Prometheus pushes by remote write, held in memory, and the step answers made from it.

``ingest.push_receiver`` feeds a ``PushStore`` with every series of each ``WriteRequest``
whose metric name ingest reads (``kept_name``), and answers the GPU and IB families'
step queries from it with ``raw_steps.step_answer``: the same computation as the remote-read
path, over samples Prometheus sent instead of samples read back from it. Pure: no I/O,
no Django; the clock is passed in (milliseconds).

A step ``ts`` is answered only where the samples it depends on (those in its lookback,
``(ts - lookback, ts]``) are known to be complete here; every other step is *uncovered*
and ingest reads it from Prometheus as before (``ingest.step_reads``):

* before ``data_from + lookback``: this process started at ``data_from`` (a sample older
  than that may have gone to a receiver process that is gone; one as new was sent here);
* after ``now - delay``: Prometheus may still be sending it (remote write batches for up
  to ``batch_send_deadline``, 5 s by default); and after the last time Prometheus told
  its start time (``sender_seen``), since a restart after that is not known yet;
* before the retention ``horizon`` (samples older than that are dropped, the newest of them
  kept per series);
* after ``newest + lookback``, where ``newest`` is the newest sample time received from any
  series: nothing has arrived for a whole lookback (Prometheus is not forwarding, is stalled
  or sends this receiver's shard elsewhere), so "no series" would be a guess;
* everywhere, once a series of another shard arrived (``shard``: this receiver takes the
  series whose ``shard_label`` hashes to ``index`` of ``count``, as Prometheus'
  ``hashmod`` relabel action computes it): the sender's sharding does not match, so what
  this receiver holds is not known to be its whole shard;
* in a sender *gap*: Prometheus restarted (or reloaded its config, which restarts its
  queues) at ``R``. Its new WAL watcher sends only samples newer than its own start
  (storage/remote/watcher.go, ``startTimestamp``), so what the old process had not sent
  yet is lost here: each series' samples after the last one received before ``R``. Steps
  from the oldest such "last sample" of the series active then, to ``R + lookback``, are
  uncovered.

Within one series remote write sends samples in time order (a series always goes to the
same shard); a sample at or before one already held replaces it or is inserted in order
(``out_of_order``), and one at or before a step already answered is counted as ``late``.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .raw_steps import StepQuery, series_keys, step_answer

Pairs = tuple[tuple[str, str], ...]
Samples = list[tuple[int, float | None]]
#: How far the retention horizon moves between two walks over every series (``prune``).
PRUNE_EVERY_MS = 60_000
#: ``remote_read`` matcher types: =, !=, =~, !~.
EQUAL, NOT_EQUAL, MATCH, NOT_MATCH = 0, 1, 2, 3


@dataclass
class Counters:
    """What the store has seen (``/metrics`` of the receiver)."""

    requests: int = 0
    series_received: int = 0
    samples_received: int = 0
    samples_ignored: int = 0  # of series whose metric ingest does not read
    out_of_order: int = 0
    late: int = 0
    sender_restarts: int = 0
    answered: int = 0
    uncovered: int = 0
    misrouted: int = 0  # series of another shard (never stored)


@dataclass
class PushStore:
    """Raw series by metric name, with what makes their step answers exact."""

    lookback_ms: int
    retention_ms: int
    delay_ms: int
    data_from_ms: int
    kept_name: re.Pattern[str]
    by_name: dict[str, dict[Pairs, Samples]] = field(default_factory=dict)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # [lo, hi) of step times
    horizon_ms: int = 0
    answered_ms: int = 0  # the latest step answered
    sender_start_ms: int | None = None
    #: When Prometheus last told its start time (``sender_seen``); later steps are uncovered.
    checked_ms: int = 0
    counters: Counters = field(default_factory=Counters)
    #: (index, count): the hashmod shard of the series this receiver takes; (0, 1) = all.
    shard: tuple[int, int] = (0, 1)
    shard_label: str = "instance"
    newest_ms: int = 0  # the newest sample time received
    _kept: dict[str, bool] = field(default_factory=dict)
    _shard_of: dict[str, int] = field(default_factory=dict)
    #: (by, either) -> series labels -> ``raw_steps.series_keys`` (series outlive cycles).
    _keys: dict[tuple, dict[Pairs, tuple[Pairs, Pairs]]] = field(default_factory=dict)

    # --- writes ------------------------------------------------------------------

    def add(self, series: Iterable[tuple[Pairs, Samples]]) -> None:
        """Take one request's series: labels as sent (sorted by name) and (ms, value|None)."""
        counters, kept, by_name = self.counters, self._kept, self.by_name
        counters.requests += 1
        newest = self.newest_ms
        for pairs, samples in series:
            name = _name(pairs)
            wanted = kept.get(name)  # type: ignore[arg-type]
            if wanted is None:
                wanted = kept[name] = name is not None and bool(self.kept_name.fullmatch(name))  # type: ignore[index]
            if not wanted:
                counters.samples_ignored += len(samples)
                continue
            counters.series_received += 1
            counters.samples_received += len(samples)
            if samples and samples[-1][0] > newest:
                newest = samples[-1][0]
            pool = by_name.get(name)  # type: ignore[arg-type]
            if pool is None:
                pool = by_name[name] = {}  # type: ignore[index]
            held = pool.get(pairs)
            if held is None:
                if self.shard[1] > 1 and not self._ours(pairs):
                    counters.misrouted += 1
                    continue
                held = pool[pairs] = []
            if (
                held
                and samples
                and samples[0][0] > held[-1][0]
                and samples[0][0] > self.answered_ms
            ):
                held.extend(samples)  # in order and new: the usual case
                if len(samples) == 1 or all(
                    a[0] < b[0] for a, b in zip(samples, samples[1:], strict=False)
                ):
                    continue
                del held[-len(samples) :]
            self._merge(held, samples)
        self.newest_ms = newest

    def _merge(self, held: Samples, samples: Samples) -> None:
        """The slow path of ``add``: samples late, out of order or repeated, one at a time."""
        counters = self.counters
        for t, value in samples:
            if t <= self.answered_ms:
                counters.late += 1
            if not held or t > held[-1][0]:
                held.append((t, value))
                continue
            counters.out_of_order += 1
            at = bisect.bisect_left(held, t, key=lambda sample: sample[0])
            if at < len(held) and held[at][0] == t:
                held[at] = (t, value)
            else:
                held.insert(at, (t, value))

    def _ours(self, pairs: Pairs) -> bool:
        """Whether a series belongs to this receiver's shard (md5 cached per label value)."""
        value = next((v for label, v in pairs if label == self.shard_label), "")
        index = self._shard_of.get(value)
        if index is None:
            index = self._shard_of[value] = hashmod(value, self.shard[1])
        return index == self.shard[0]

    def sender_seen(self, start_ms: int, at_ms: int) -> bool:
        """Prometheus said at ``at_ms`` that it (re)started or reloaded at ``start_ms``: open a
        gap if that is new. The first start seen is taken as known (this process' own start
        covers it). Returns True when a gap was opened.
        """
        self.checked_ms = max(self.checked_ms, at_ms)
        previous, self.sender_start_ms = self.sender_start_ms, start_ms
        if previous is None or start_ms <= previous:
            return False
        self.counters.sender_restarts += 1
        oldest_last = start_ms
        active_from = start_ms - self.lookback_ms
        for held in self.by_name.values():
            for samples in held.values():
                at = bisect.bisect_left(samples, start_ms, key=lambda sample: sample[0])
                if at and samples[at - 1][0] >= active_from:
                    oldest_last = min(oldest_last, samples[at - 1][0])
        self.gaps.append((oldest_last, start_ms + self.lookback_ms))
        return True

    def prune(self, now_ms: int) -> None:
        """Drop samples older than the retention, keeping each series' newest older one
        (a walk over every series: done once the horizon has moved by a minute)."""
        horizon = now_ms - self.retention_ms
        if horizon < self.horizon_ms + PRUNE_EVERY_MS:
            return
        self.horizon_ms = horizon
        for name, held in list(self.by_name.items()):
            for pairs, samples in list(held.items()):
                at = bisect.bisect_left(samples, horizon, key=lambda sample: sample[0])
                if at == len(samples) and samples and samples[-1][0] < horizon - self.lookback_ms:
                    del held[pairs]  # nothing within a lookback of the horizon: gone
                    for cache in self._keys.values():
                        cache.pop(pairs, None)
                elif at > 1:
                    del samples[: at - 1]
            if not held:
                del self.by_name[name]
        self.gaps = [(lo, hi) for lo, hi in self.gaps if hi > horizon]

    # --- reads -------------------------------------------------------------------

    def uncovered(self, times: Sequence[int], now_ms: int) -> list[int]:
        """The step times (ms) of ``times`` this store cannot answer exactly (module docstring)."""
        if self.counters.misrouted:
            return list(times)
        first = max(self.data_from_ms + self.lookback_ms, self.horizon_ms)
        last = min(now_ms - self.delay_ms, self.checked_ms, self.newest_ms + self.lookback_ms)
        return [
            ts
            for ts in times
            if ts < first or ts > last or any(lo <= ts < hi for lo, hi in self.gaps)
        ]

    def series(self, selector: Sequence[tuple[int, str, str]]) -> list[tuple[Pairs, Samples]]:
        """The held series a selector's matchers (``remote_read.matchers``) select."""
        names = [value for kind, label, value in selector if kind == EQUAL and label == "__name__"]
        pools = [self.by_name.get(names[0], {})] if names else list(self.by_name.values())
        tests = [
            _test(kind, label, value)
            for kind, label, value in selector
            if not (names and kind == EQUAL and label == "__name__" and value == names[0])
        ]
        if not tests:
            return [item for pool in pools for item in pool.items()]
        found = []
        for pool in pools:
            for pairs, samples in pool.items():
                labels = dict(pairs)
                if all(test(labels) for test in tests):
                    found.append((pairs, samples))
        return found

    def answer(
        self,
        query: StepQuery,
        selectors: Sequence[Sequence[tuple[int, str, str]]],
        times: Sequence[int],
        closed: bool,
    ) -> list[dict[str, Any]]:
        """``data.result`` of ``query`` at ``times`` (every one of them covered)."""
        first = times[0] if times else 0
        raw = [[(p, _tail(s, first)) for p, s in self.series(selector)] for selector in selectors]
        if times:
            self.answered_ms = max(self.answered_ms, times[-1])
        self.counters.answered += len(times)
        either = len(selectors) > 1
        cache = self._keys.setdefault((query.by, either), {})

        def keys(labels: Sequence[tuple[str, str]]) -> tuple[Pairs, Pairs]:
            pairs = tuple(labels)  # the store's labels are tuples already: no copy
            found = cache.get(pairs)
            if found is None:
                found = cache[pairs] = series_keys(pairs, query.by, either)
            return found

        return step_answer(query, raw, times, self.lookback_ms, closed, keys)


def _tail(samples: Samples, first: int) -> Samples:
    """The samples from the newest one at or before ``first`` on (what the steps can see)."""
    index = len(samples) - 1
    while index > 0 and samples[index][0] > first:
        index -= 1
    return samples[index:] if index > 0 else samples


def _name(pairs: Pairs) -> str | None:
    for label, value in pairs:
        if label == "__name__":
            return value
    return None


def _test(kind: int, label: str, value: str):  # noqa: ANN202 - a predicate over a label dict
    if kind == EQUAL:
        return lambda labels: labels.get(label, "") == value
    if kind == NOT_EQUAL:
        return lambda labels: labels.get(label, "") != value
    pattern = re.compile(value)  # PromQL regexes are anchored: fullmatch
    if kind == MATCH:
        return lambda labels: pattern.fullmatch(labels.get(label, "")) is not None
    return lambda labels: pattern.fullmatch(labels.get(label, "")) is None


def hashmod(value: str, modulus: int) -> int:
    """Prometheus' ``hashmod`` relabel action on one source value (model/relabel/relabel.go:
    the md5 sum's last 8 bytes, big-endian, modulo ``modulus``)."""
    return int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus  # noqa: S324 - not for security: Prometheus' own hash


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` (0 <= I < N) as (I, N); "" is (0, 1): unsharded."""
    if not text:
        return (0, 1)
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 0 <= int(index) < int(count):
        raise ValueError(f"{text!r}: expected I/N with 0 <= I < N, e.g. 0/2")
    return int(index), int(count)


def intervals(times: Sequence[int], step_ms: int) -> list[tuple[int, int]]:
    """Consecutive runs of step times as (first, last) pairs."""
    runs: list[tuple[int, int]] = []
    for ts in times:
        if runs and ts - runs[-1][1] == step_ms:
            runs[-1] = (runs[-1][0], ts)
        else:
            runs.append((ts, ts))
    return runs
