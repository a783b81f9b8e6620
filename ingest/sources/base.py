"""The contract every family source fulfils.

``services`` owns the cycle: it takes the family's advisory lock, reads the
cursor, splits the window, calls ``pull`` (network only, no database) and then,
inside ONE transaction, ``store`` followed by the cursor update. So a source
never commits, never touches the cursor, and must make ``store`` idempotent
(unique keys + ON CONFLICT) so a re-run window writes nothing new.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import connection

from ..normalize import Collected, Folded, KeyOf
from ..prometheus import Answer, PrometheusClient, PrometheusError, PrometheusUnavailable, decode
from ..sampling import SAMPLED_AT, CarryIn, Sampling
from ..step_reads import read_steps


@dataclass(frozen=True)
class Window:
    """Ingest the steps ``start < ts <= end`` at ``step`` seconds (timestamps aligned to step)."""

    start: datetime
    end: datetime
    step: int

    def fetch_start(self, kind: str) -> datetime:
        """Where a query for a column of ``kind`` starts: a counter needs the context point
        at ``start`` (its previous value); a gauge is read at the steps only."""
        return self.start + timedelta(seconds=self.step) if kind == "gauge" else self.start


@dataclass
class Batch:
    """What ``pull`` fetched and normalised; opaque to services except the counters."""

    family: str
    window: Window
    payload: Any = None
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    #: Series skipped for a reason (``"job: reason"`` → distinct series), e.g. no known node.
    unfit: dict[str, int] = field(default_factory=dict)


@dataclass
class StoreResult:
    """Rows written (after de-duplication) by ``store``."""

    rows: int = 0


#: Each sampling query's newest window in this process (``fetch_sampling``): key →
#: (unix end of that window, its sample times over the context the next window needs).
_SAMPLED: dict[tuple[object, ...], tuple[float, Folded]] = {}
#: At most this many kept (a shard's key changes with its nodes; the oldest go first).
SAMPLED_KEPT = 64
_SAMPLED_LOCK = threading.Lock()  # families pull in threads of one process


def fetch_sampling(
    client: PrometheusClient, promql: str, window: Window, unit_of: KeyOf
) -> Sampling | None:
    """Each unit's sample times (``ingest.sampling``) over the window and the context before
    it (two of the longest scrape intervals); None when the backend answered none.

    The context is read once: when the previous window of the same query (same backend,
    shard and step) was read in this process and ended where this one starts, only the
    window's steps and the step at its start are asked for (the start step again, as the
    counters' context point is, so both see the same sample there), and the older context
    is that window's answer. A failed query is None, as with the whole context.
    """
    longest = settings.INGEST_MAX_SCRAPE_INTERVAL_SECONDS
    context = -(-2 * longest // window.step) * window.step
    first, last = window.start.timestamp(), window.end.timestamp()
    key = (
        client.url, getattr(client, "matcher", None), getattr(client, "shard", None),
        promql, window.step,
    )  # fmt: skip
    with _SAMPLED_LOCK:
        end, kept = _SAMPLED.pop(key, (None, None))
    carried = kept if end == first else None
    start = window.start if carried is not None else window.start - timedelta(seconds=context)
    collected = Collected()
    collected.add_answers(
        [SAMPLED_AT], read_steps(client, [(promql, start)], window.end, window.step), unit_of
    )
    if SAMPLED_AT not in collected.columns:  # the query failed
        return None
    at = collected.columns[SAMPLED_AT]
    if carried is not None:
        at = {**{ts: units for ts, units in carried.items() if ts < first}, **at}
    newest = {ts: units for ts, units in at.items() if ts >= last - context}
    with _SAMPLED_LOCK:
        _SAMPLED[key] = (last, newest)
        while len(_SAMPLED) > SAMPLED_KEPT:
            del _SAMPLED[next(iter(_SAMPLED))]
    return Sampling.of(at, window.step)


def forget_sampling() -> None:
    """Drop every kept sampling context (the next window of each query reads its own)."""
    with _SAMPLED_LOCK:
        _SAMPLED.clear()


def read_answer(client: PrometheusClient, promql: str, window: Window) -> Answer:
    """One query over the window's steps from its start (``step_reads``), decoded; a malformed
    answer is one skipped item (``query_range_lenient``), an outage raises."""
    answer = Answer()
    try:
        for _index, result in read_steps(client, [(promql, window.start)], window.end, window.step):
            if isinstance(result, PrometheusError):
                raise result
            answer.extend(decode(result))
    except PrometheusUnavailable:
        raise
    except PrometheusError:
        return Answer(skipped=1)
    return answer


def read_stored(read: CarryIn) -> CarryIn:
    """``read`` run where ``pull`` runs (a worker thread): its connection closed after."""

    def carried() -> Mapping[str, Mapping[Any, float]]:
        try:
            return read()
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    return carried


class Source(ABC):
    """A family's fetch → normalise → store. Mandatory: ``family``, ``pull``, ``store``.

    ``pull`` reads the network only, except that a counter carried into a window
    (``ingest.sampling``) starts from the values the previous window of the same
    instance computed, or, for the first window of a cycle, from what is stored.
    """

    family: ClassVar[str]

    def __init__(self) -> None:  # noqa: D107
        #: dialect → (unix end of the last window pulled, column → key → its last values).
        self.carried: dict[str, tuple[int, Mapping[str, Mapping[Any, float]]]] = {}

    def carry_in(self, dialect: str, window: Window, stored: CarryIn) -> CarryIn:
        """What counters carried into ``window`` start from: the previous window's last
        values when this instance pulled it, else ``stored`` (read only if asked)."""
        start = int(window.start.timestamp())
        end, values = self.carried.get(dialect, (None, None))
        if end == start and values is not None:
            return lambda: values
        return read_stored(stored)

    @abstractmethod
    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch and normalise the window. Network only; raise PrometheusError on failure."""

    @abstractmethod
    def store(self, batch: Batch) -> StoreResult:
        """Write the batch in the caller's transaction; idempotent."""
