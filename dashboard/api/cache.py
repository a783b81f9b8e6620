"""Heatmap answers cached per ingest cycle.

A heatmap only changes when ingest commits new rows for its family, which
advances that family's ``IngestCursor``. Keying the cache on the cursor makes
every viewer after the first in a cycle (and every re-load of the second
screen) a Redis read instead of a million-row aggregate, with no explicit
invalidation. Without a cursor (nothing ingested through a cycle) nothing is
cached.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.core.cache import cache

from ingest.models import IngestCursor

from ..choices import IB_METRICS

TTL_SECONDS = 600


def heatmap_key(metric: str, sort: str, start: datetime, end: datetime, step: int) -> str | None:
    """The cache key of one heatmap at the current cursor of its family (None: do not cache)."""
    family = "ib" if metric in IB_METRICS else "gpu"
    covered = (
        IngestCursor.objects.filter(family=family).values_list("covered_until", flat=True).first()
    )
    if covered is None:
        return None
    return f"heatmap:{metric}:{sort}:{start.timestamp():.0f}:{end.timestamp():.0f}:{step}:{covered.timestamp():.0f}"


def cached(key: str | None, build: Callable[[], str]) -> str:
    """``build()`` once per key; errors reading or writing the cache fall back to building."""
    if key is None:
        return build()
    try:
        hit = cache.get(key)
    except Exception:  # noqa: BLE001 - a Redis hiccup must not break the page
        hit = None
    if hit is not None:
        return hit
    value = build()
    try:
        cache.set(key, value, TTL_SECONDS)
    except Exception:  # noqa: BLE001
        pass
    return value
