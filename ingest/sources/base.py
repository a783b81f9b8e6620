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

from ..normalize import Collected, KeyOf
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


def fetch_sampling(
    client: PrometheusClient, promql: str, window: Window, unit_of: KeyOf
) -> Sampling | None:
    """Each unit's sample times (``ingest.sampling``) over the window and the context before
    it (two of the longest scrape intervals); None when the backend answered none."""
    longest = settings.INGEST_MAX_SCRAPE_INTERVAL_SECONDS
    context = -(-2 * longest // window.step) * window.step
    collected = Collected()
    start = window.start - timedelta(seconds=context)
    collected.add_answers(
        [SAMPLED_AT], read_steps(client, [(promql, start)], window.end, window.step), unit_of
    )
    return Sampling.of(collected.columns.get(SAMPLED_AT, {}), window.step)


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
