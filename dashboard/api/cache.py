"""Heatmap answers cached per ingest cycle.

A heatmap only changes when ingest commits new rows for its family, which
advances that family's ``IngestCursor``. Keying the cache on the cursor makes
every viewer after the first in a cycle (and every re-load of the second
screen) a Redis read instead of a million-row aggregate, with no explicit
invalidation. Without a cursor (nothing ingested through a cycle) nothing is
cached.

The overview's 24 h utilization and a node's per-device columns (read by the
node page and then by its JSON) are cached the same way, on their family's cursor.
The whole overview is keyed on every cursor plus the alerts' change marker and a
time tick (``overview_key``).

``dashboard.api.builders.warm`` (an ingest after-commit hook, wired in config) builds the
24-hour heatmaps of the families just committed (and the overview's utilization after a
GPU commit), so even the first viewer after a cycle reads Redis. Since the per-node rollups a build costs ~0.1-0.2 s at 512 nodes.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

from ingest.selectors import Family
from ingest.selectors import nodes as inventory

from .. import alerting, summaries
from ..choices import IB_METRICS, NICE_STEPS
from ..forms import TimeRange

T = TypeVar("T")
Columns = dict[str, dict[str, list]]
TTL_SECONDS = 600
#: The node page's families and their cache key prefixes (as ``cursor_key`` joins them).
NODE_FAMILIES = {Family.GPU: "node-gpus", Family.IB: "node-ports"}
log = logging.getLogger(__name__)


def cursor_key(family: str, *parts: object) -> str | None:
    """``parts`` joined into a key at the current cursor of ``family`` (None: do not cache).

    The next ingest commit of the family advances its cursor, so the key changes:
    that is the invalidation.
    """
    covered = inventory.covered_until(family)
    if covered is None:
        return None
    return ":".join([*map(str, parts), f"{covered.timestamp():.0f}"])


def node_columns(
    node: str, span: TimeRange, cursors: dict[str, datetime] | None = None
) -> tuple[Columns, Columns]:
    """(GPU columns, port columns) of ``node`` over ``span``, each cached per cycle of its family.

    The node page and its JSON (which the page's viewer loads next) read the same columns:
    both keys in one Redis read and, on a miss, both families in one read
    (``summaries.node_devices``); each key as ``cursor_key`` makes it, from ``cursors``
    (family → covered_until, as ``ingest.node_page.node_facts`` read them; None: read here).
    """
    if cursors is None:
        cursors = dict(inventory.cursor_marks())
    bounds = (f"{span.start.timestamp():.0f}", f"{span.end.timestamp():.0f}", span.step)
    keys = {
        family: ":".join([kind, node, *map(str, bounds), f"{cursors[family].timestamp():.0f}"])
        for family, kind in NODE_FAMILIES.items()
        if family in cursors
    }
    hits = _get_many(list(keys.values()))
    if len(hits) == len(NODE_FAMILIES):
        return hits[keys[Family.GPU]], hits[keys[Family.IB]]
    built = summaries.node_devices(node, span.start, span.end, span.step)
    _set_many({key: built[list(NODE_FAMILIES).index(family)] for family, key in keys.items()})
    return built


def _get_many(keys: list[str]) -> dict[str, Any]:
    try:
        return cache.get_many(keys) if keys else {}
    except Exception:  # noqa: BLE001 - a Redis hiccup must not break the page
        return {}


def _set_many(values: dict[str, Any]) -> None:
    try:
        cache.set_many(values, TTL_SECONDS)
    except Exception:  # noqa: BLE001
        pass


def overview_key(now: datetime) -> str | None:
    """The overview's key: moves with every ingest commit, alert or silence change, and period.

    The time part (DASHBOARD_OVERVIEW_REFRESH_SECONDS) bounds how stale what depends on
    the clock alone can get (ingest lag, a node turning "missing" when ingest stops).
    None (no caching) when the period is 0.
    """
    period = settings.DASHBOARD_OVERVIEW_REFRESH_SECONDS
    if not period:
        return None
    cursors = inventory.cursor_marks()
    tick = int(now.timestamp() // period)
    state = "|".join([str(tick), *map(str, cursors), alerting.change_marker()])
    return "overview:" + hashlib.sha256(state.encode()).hexdigest()


def heatmap_key(metric: str, sort: str, start: datetime, end: datetime, step: int) -> str | None:
    """The cache key of one heatmap at the current cursor of its family (None: do not cache).

    Only normalised ranges are cached: a step among ``NICE_STEPS`` and both ends on a
    multiple of it (what the windows and the pages ask for). Arbitrary start, end and
    step values are answered but never stored, so they cannot fill Redis.
    """
    if not is_normalised(start, end, step):
        return None
    family = Family.IB if metric in IB_METRICS else Family.GPU
    return cursor_key(
        family,
        "heatmap-utf8",
        metric,
        sort,
        f"{start.timestamp():.0f}",
        f"{end.timestamp():.0f}",
        step,
    )


def is_normalised(start: datetime, end: datetime, step: int) -> bool:
    """Whether a range is one of the cacheable ones (a nice step, ends aligned to it)."""
    aligned = start.timestamp() % step == 0 and end.timestamp() % step == 0
    return step in NICE_STEPS and aligned


def cached(key: str | None, build: Callable[[], T]) -> T:
    """``build()`` once per key (any picklable value but None); cache errors fall back to building."""
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
