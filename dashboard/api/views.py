"""JSON endpoints under /api/v1/: thin like the pages (form → read → shape)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.decorators.http import require_GET

from ingest import selectors
from ingest.models import Node

from .. import alerting, summaries
from ..forms import HeatmapForm, NodeForm, RailsForm, first_error
from . import serialize
from .cache import cached, cursor_key, heatmap_key, node_columns, overview_key
from .registry import document


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


@require_GET
def heatmap(request: HttpRequest) -> HttpResponse:
    """Rows = nodes, columns = time, one metric; rollups for long windows."""
    body = build_heatmap(request.GET)
    if body is None:
        return serialize.bad_request(*first_error(HeatmapForm(request.GET)))
    return serialize.with_marks(body, alerting.node_marks())


@require_GET
def rails(request: HttpRequest) -> HttpResponse:
    """Nodes × HCA ports for the window: one cell per port, to spot one bad cable."""
    form = RailsForm(request.GET)
    if not form.is_valid():
        return serialize.bad_request(*first_error(form))
    span = form.time_range()
    result = selectors.rail_matrix(form.cleaned_data["metric"], span.start, span.end)
    return serialize.fast_json(serialize.rails(result, span.start, span.end))


def overview_window(now: datetime) -> tuple[datetime, datetime]:
    """The overview's 24 h window, ending at the next quarter hour (stable 15-minute columns)."""
    end = now.replace(minute=now.minute - now.minute % 15, second=0, microsecond=0)
    end += timedelta(minutes=15)
    return end - timedelta(hours=24), end


def utilization_block(start: datetime, end: datetime) -> dict[str, Any]:
    """The overview's 24 h utilization (a 150 k-row rollup aggregate), cached per GPU ingest cycle."""
    key = cursor_key("gpu", "overview-utilization", f"{start.timestamp():.0f}")
    return cached(key, lambda: serialize.utilization(summaries.utilization(start, end, 900)))


def overview_body() -> dict[str, Any]:
    """Everything the overview shows, as JSON-ready data; built once per change (see ``overview_key``)."""
    now = timezone.now()
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


@require_GET
def overview(request: HttpRequest) -> JsonResponse:
    """Node states, alerts, reported vs real utilization, drift, ingest health, queues, pools."""
    return JsonResponse(overview_body())


@require_GET
def node(request: HttpRequest, name: str) -> HttpResponse:
    """One node: per-GPU and per-port series, XIDs, runs, alerts, pool and leaf switch."""
    node = get_object_or_404(Node, name=name)
    form = NodeForm(request.GET)
    if not form.is_valid():
        return serialize.bad_request(*first_error(form))
    span = form.time_range()
    gpus, ports = node_columns(node, span)
    return serialize.orjson_response(
        {
            "node": {
                "name": node.name,
                "pool": node.pool,
                "leaf_switch": node.leaf_switch,
                "gpu_model": node.gpu_model,
                "last_seen": serialize.iso(node.last_seen),
            },
            "start": serialize.iso(span.start),
            "end": serialize.iso(span.end),
            "step": span.step,
            "gpus": serialize.series_block(gpus),
            "ports": serialize.series_block(ports),
            "xids": [
                {"ts": serialize.iso(ts), "gpu": gpu, "code": code, "message": message}
                for ts, gpu, code, message in summaries.node_xids(node, span.start, span.end)
            ],
            "runs": [serialize.plain(run) for run in summaries.node_runs(node)],
            "alerts": [serialize.alert(a) for a in alerting.for_node(node.name)],
        }  # fmt: skip
    )


@require_GET
def openapi(request: HttpRequest) -> JsonResponse:
    """The OpenAPI document of /api/v1/ (every registered endpoint)."""
    return JsonResponse(document())
