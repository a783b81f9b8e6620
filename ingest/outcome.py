"""What one ingest cycle of one family did: written by ``services``, recorded by ``health``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class CycleOutcome:
    """What one family's cycle did. ``status``: ok, idle (nothing new), locked, error."""

    family: str
    status: str = "ok"
    window_start: datetime | None = None
    window_end: datetime | None = None
    covered_until: datetime | None = None
    rows: int = 0
    skipped: int = 0
    chunks: int = 0
    duration: float = 0.0
    error: str = ""
    notes: list[str] = field(default_factory=list)
    #: Series skipped for a reason (``"job: reason"`` → most distinct series in one chunk).
    unfit: dict[str, int] = field(default_factory=dict)
