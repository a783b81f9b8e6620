"""Heatmap answers cached per ingest cycle.

A heatmap only changes when ingest commits new rows for its family, which
advances that family's ``IngestCursor``. Keying the cache on the cursor makes
every viewer after the first in a cycle (and every re-load of the second
screen) a Redis read instead of a million-row aggregate, with no explicit
invalidation. Without a cursor (nothing ingested through a cycle) nothing is
cached.

``warm`` (an ingest after-commit hook, wired in config) builds the 24-hour
heatmaps of the families just committed, so even the first viewer after a cycle
reads Redis. Since the per-node rollups a build costs ~0.1-0.2 s at 512 nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.core.cache import cache

from ingest.models import IngestCursor

from ..choices import IB_METRICS, HeatmapMetric, HeatmapSort

TTL_SECONDS = 600
#: What ``warm`` builds: the long window a second screen keeps open, at a laptop's plot width
#: (any width from 864 px gives the same 5-minute columns, hence the same key).
WARM_WINDOW = "24h"
WARM_WIDTH = 1200
log = logging.getLogger(__name__)


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


def warm(event: Mapping[str, Any]) -> int:
    """Build and cache the 24 h heatmaps (row order by name) of the committed families.

    An ``INGEST_AFTER_COMMIT_HOOKS`` entry taking the ``IngestCommitted`` event;
    returns how many heatmaps were built.
    """
    from .views import build_heatmap

    if event.get("type") != "ingest.committed":
        return 0
    families = set(event.get("families") or ())
    built = 0
    for metric in HeatmapMetric.values:
        if ("ib" if metric in IB_METRICS else "gpu") in families:
            query = {"metric": metric, "window": WARM_WINDOW, "sort": HeatmapSort.NAME,
                     "width": WARM_WIDTH}  # fmt: skip
            built += build_heatmap(query) is not None
    return built
