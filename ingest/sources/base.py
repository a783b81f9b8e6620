"""The contract every family source fulfils.

``services`` owns the cycle: it takes the family's advisory lock, reads the
cursor, splits the window, calls ``pull`` (network only, no database) and then,
inside ONE transaction, ``store`` followed by the cursor update. So a source
never commits, never touches the cursor, and must make ``store`` idempotent
(unique keys + ON CONFLICT) so a re-run window writes nothing new.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from ..prometheus import PrometheusClient


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


class Source(ABC):
    """A family's fetch → normalise → store. Mandatory: ``family``, ``pull``, ``store``."""

    family: ClassVar[str]

    @abstractmethod
    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch and normalise the window. Network only; raise PrometheusError on failure."""

    @abstractmethod
    def store(self, batch: Batch) -> StoreResult:
        """Write the batch in the caller's transaction; idempotent."""
