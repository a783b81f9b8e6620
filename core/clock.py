"""The one clock of windows, defaults and caches: forms and selectors read "now" here.

Call it as ``clock.now()`` (``from core import clock``), never import the function itself:
tests pin the clock by replacing ``core.clock.now`` (tests/support/clock.py), which a name
bound at import time would not see.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return timezone.now()
