"""The pinned clock: four fixed instants that time-sensitive tests run at.

Forms and selectors read "now" from ``core.clock.now``; ``pinned`` replaces it, so a test
that builds data "ending now" and then asks a page for "the last 24 h" sees one instant,
not two that may straddle a 5-minute, quarter-hour or day boundary. The four epochs are
the edges that broke tests before: midnight, just before an hour, mid-hour and 30 s before
midnight.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from unittest import mock

import redis
from django.conf import settings

from core import clock

FIXED_EPOCHS = {
    "00:00": datetime(2026, 3, 2, 0, 0, tzinfo=UTC),
    "05:59": datetime(2026, 3, 2, 5, 59, tzinfo=UTC),
    "12:30": datetime(2026, 3, 2, 12, 30, tzinfo=UTC),
    "23:59:30": datetime(2026, 3, 2, 23, 59, 30, tzinfo=UTC),
}


@contextmanager
def pinned(moment: datetime) -> Iterator[datetime]:
    """``core.clock.now()`` answers ``moment`` inside the block."""
    with mock.patch.object(clock, "now", lambda: moment):
        yield moment


def forget_cached() -> None:
    """Delete the app's cache entries (not the broker's keys): a pinned epoch repeats its keys
    from one pytest run to the next, so a cached answer of an earlier run must not be served."""
    prefix = settings.CACHES["default"]["KEY_PREFIX"]
    client = redis.Redis.from_url(settings.REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()
