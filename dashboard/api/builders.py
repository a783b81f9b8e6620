"""What the JSON endpoints and pages answer, built once and cached (``cache``), and ``warm``.

The endpoints (``views``) and the overview page call these; the ingest after-commit hook
``warm`` calls them ahead of the first viewer. Nothing here knows about requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from core import clock
from ingest import selectors
from ingest.selectors import Family

from .. import alerting, summaries
from ..choices import HEATMAP_METRIC_IDS, IB_METRICS, HeatmapSort
from ..forms import HeatmapForm
from . import serialize
from .cache import cached, cursor_key, heatmap_key, overview_key

#: What ``warm`` builds: the long window a second screen keeps open, at a laptop's plot width
#: (any width from 864 px gives the same 5-minute columns, hence the same key).
WARM_WINDOW = "24h"
WARM_WIDTH = 1200


def build_heatmap(query: Mapping[str, Any]) -> bytes | None:
    """The heatmap for ``query`` (the endpoint's parameters) as UTF-8 JSON, cached; None if invalid."""
    form = HeatmapForm(query)
    if not form.is_valid():
        return None
    span = form.time_range()
    metric, sort = form.cleaned_data["metric"], form.cleaned_data["sort"]

    def build() -> bytes:
        result = selectors.heatmap_rows(metric, span.start, span.end, span.step, sort)
        return serialize.heatmap_json(result, span.start, span.end)

    return cached(heatmap_key(metric, sort, span.start, span.end, span.step), build)


def overview_window(now: datetime) -> tuple[datetime, datetime]:
    """The overview's 24 h window, ending at the next quarter hour (stable 15-minute columns)."""
    end = now.replace(minute=now.minute - now.minute % 15, second=0, microsecond=0)
    end += timedelta(minutes=15)
    return end - timedelta(hours=24), end


def utilization_block(start: datetime, end: datetime) -> dict[str, Any]:
    """The overview's 24 h utilization (a 150 k-row rollup aggregate), cached per GPU ingest cycle."""
    key = cursor_key(Family.GPU, "overview-utilization", f"{start.timestamp():.0f}")
    return cached(key, lambda: serialize.utilization(summaries.utilization(start, end, 900)))


def overview_body() -> dict[str, Any]:
    """Everything the overview shows, as JSON-ready data; built once per change (see ``overview_key``)."""
    now = clock.now()
    return cached(overview_key(now), lambda: build_overview(now))


def build_overview(now: datetime) -> dict[str, Any]:
    """The overview's data at ``now`` (a dozen queries; ``overview_body`` caches it)."""
    start, end = overview_window(now)
    firing = alerting.firing()
    states = summaries.node_states(firing)
    utilization = utilization_block(start, end)
    # A pool's node count is drawn where its nodes reported GPU data (as its utilization).
    reporting = {
        pool: [u is not None or t is not None for u, t in zip(s["util"], s["tensor"], strict=True)]
        for pool, s in utilization["series"].items()
    }
    times, counts = summaries.pool_counts(start, end, utilization["step"], reporting)
    return {
        "generated_at": serialize.iso(now),
        "nodes": {**states, "as_of": serialize.iso(states["as_of"])},
        "alerts": serialize.alerts_block(firing),
        "utilization": utilization,
        "ingest": [serialize.plain(row) for row in summaries.family_health(now)],
        "queues": [serialize.plain(row) for row in summaries.queue_summary()],
        "pools": {"times": [serialize.iso(t) for t in times], "counts": counts},
    }


def warm(event: Mapping[str, Any]) -> int:
    """Build and cache the 24 h heatmaps (row order by name) of the committed families.

    An ``INGEST_AFTER_COMMIT_HOOKS`` entry taking the ``IngestCommitted`` event;
    returns how many heatmaps were built.
    """

    if event.get("type") != "ingest.committed":
        return 0
    families = set(event.get("families") or ())
    built = 0
    for metric in HEATMAP_METRIC_IDS:
        if (Family.IB if metric in IB_METRICS else Family.GPU) in families:
            query = {"metric": metric, "window": WARM_WINDOW, "sort": HeatmapSort.NAME,
                     "width": WARM_WIDTH}  # fmt: skip
            built += build_heatmap(query) is not None
    if Family.GPU in families:
        utilization_block(*overview_window(clock.now()))  # not counted: not a heatmap
    return built
