"""JSON endpoints under /api/v1/: thin like the pages (form → read → shape)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from ingest import node_page, selectors
from ingest.selectors import nodes as inventory
from runs import selectors as run_selectors

from .. import alerting
from ..forms import HeatmapForm, NodeForm, RailsForm, first_error
from . import serialize
from .builders import build_heatmap, overview_body
from .cache import node_columns
from .registry import document


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


@require_GET
def overview(request: HttpRequest) -> JsonResponse:
    """Node states, alerts, reported vs real utilization, drift, ingest health, queues, pools."""
    return JsonResponse(overview_body())


@require_GET
def node(request: HttpRequest, name: str) -> HttpResponse:
    """One node: per-GPU and per-port series, XIDs, runs, alerts, pool and leaf switch."""
    form = NodeForm(request.GET)
    if not form.is_valid():
        if inventory.node(name) is None:  # an unknown node is a 404 whatever the parameters
            raise Http404(f"no node named {name!r}")
        return serialize.bad_request(*first_error(form))
    span = form.time_range()
    facts = node_page.node_facts(name, span.start, span.end)
    if facts is None:
        raise Http404(f"no node {name!r}")
    node = facts.node
    gpus, ports = node_columns(node.name, span, facts.cursors)
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
                for ts, gpu, code, message in facts.xids
            ],
            "runs": [serialize.plain(run) for run in run_selectors.runs_on_node(node.pk)],
            "alerts": [serialize.alert(a) for a in alerting.for_node(node.name)],
        }  # fmt: skip
    )


@require_GET
def openapi(request: HttpRequest) -> JsonResponse:
    """The OpenAPI document of /api/v1/ (every registered endpoint)."""
    return JsonResponse(document())
