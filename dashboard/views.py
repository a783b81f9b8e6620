"""Dashboard pages: thin views, data from selectors, figures from charts."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from ingest import node_page
from ingest.selectors import nodes as inventory
from runs import selectors as run_selectors

from . import alerting, charts, summaries
from .api import serialize
from .api.builders import overview_body
from .api.cache import node_columns
from .choices import HEATMAP_METRIC_CHOICES, IB_METRICS, HeatmapSort, Window
from .forms import AlertFilterForm, NodeForm, TriageForm, first_error


def overview(request: HttpRequest) -> HttpResponse:
    """The landing page: what is wrong, where, since when."""
    body = overview_body()
    util = body["utilization"]
    series = {name: (s["util"], s["tensor"]) for name, s in util["series"].items()}
    context = {
        "title": "Overview",
        "body": body,
        "states": body["nodes"]["by_state"],
        "utilization_figure": charts.utilization(util["times"], series) if series else None,
        "pools_figure": charts.pools(body["pools"]["times"], body["pools"]["counts"])
        if body["nodes"]["total"]
        else None,
    }
    return render(request, "dashboard/overview.html", context)


def fabric(request: HttpRequest) -> HttpResponse:
    """The per-node heatmap and rails view; drawn in the browser from /api/v1/heatmap."""
    context = {
        "title": "Fabric",
        "metrics": HEATMAP_METRIC_CHOICES,
        "ib_metrics": sorted(IB_METRICS),
        "sorts": HeatmapSort.choices,
        "windows": Window.choices,
        "query": {
            key: request.GET.get(key, "") for key in ("metric", "window", "sort", "start", "end")
        },
        "has_nodes": inventory.has_nodes(),
    }
    return render(request, "dashboard/fabric.html", context)


def node_list(request: HttpRequest) -> HttpResponse:
    """Every node, its state, pool and leaf switch."""
    return render(
        request, "dashboard/node_list.html", {"title": "Nodes", "rows": summaries.node_list()}
    )


def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One node: GPUs (util vs tensor vs power, XIDs), IB ports, NVLink, alerts, runs."""
    form = NodeForm(request.GET)
    if not form.is_valid():
        known = inventory.node(name)
        if known is None:  # an unknown node is a 404 whatever the parameters
            raise Http404(f"no node named {name!r}")
        return render(request, "dashboard/node_detail.html", {"title": known.name, "node": known, "form": form},
                      status=400)  # fmt: skip
    span = form.time_range()
    at = form.cleaned_data.get("at")
    facts = node_page.node_facts(name, span.start, span.end)  # one query for the page's rows
    if facts is None:
        raise Http404(f"no node {name!r}")
    node = facts.node
    # ISO times once: the figures repeat them per trace, and the encoder is slow on datetimes.
    gpus, ports = map(serialize.series_block, node_columns(node.name, span, facts.cursors))
    context = {
        "title": node.name,
        "node": node,
        "form": form,
        "span": span,
        "at": at,
        "gpu_figure": charts.node_gpus(gpus, facts.xids, at) if gpus else None,
        "nvlink_figure": charts.node_nvlink(gpus, at) if gpus else None,
        "port_figure": charts.node_ports(ports, at) if ports else None,
        "ports": facts.ports,
        "pool_changes": facts.pool_changes,
        "runs": run_selectors.runs_on_node(node.pk),
        "alerts": alerting.for_node(node.name),
        "hardware": alerting.hardware([node.name]).get(node.name),
        "maintenance": alerting.maintenance_for(node.name),
        "windows": Window.choices,
    }
    return render(request, "dashboard/node_detail.html", context)


def alert_list(request: HttpRequest) -> HttpResponse:
    """Alerts by state with filters, 50 a page; each links to its page, node and run."""
    form = AlertFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    page = alerting.alert_page(filters, filters.get("page"))
    context = {
        "title": "Alerts",
        "form": form,
        "page": page,
        "alerts": page.object_list if page is not None else [],
        "pager_query": form.query_without_page(),
        "rules": alerting.rule_names(),
        "counts": alerting.counts(),
        "states": list(alerting.STATES),
    }
    return render(request, "dashboard/alert_list.html", context)


def alert_detail(request: HttpRequest, alert_id: int) -> HttpResponse:
    """One alert: what, where, whom it hurts (runs, GPU-hours at stake), who is on it, history."""
    found = alerting.detail(alert_id)
    if found is None:
        raise Http404(f"no alert {alert_id}")
    context = {"title": f"{found['name']} #{alert_id}", "a": found, "triage_form": TriageForm()}
    return render(request, "dashboard/alert_detail.html", context)


@require_POST
def alert_triage(request: HttpRequest, alert_id: int) -> HttpResponse:
    """Acknowledge / un-acknowledge / assign, then back to where the form was."""
    form = TriageForm(request.POST)
    back = request.POST.get("next") or f"/alerts/{alert_id}/"
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = f"/alerts/{alert_id}/"
    if not form.is_valid():
        field, message = first_error(form)
        messages.error(request, f"{field}: {message}")
        return redirect(back)
    data = form.cleaned_data
    error = alerting.triage(alert_id, request.user, data["action"], data)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"Alert {alert_id}: {data['action']} done.")
    return redirect(back)
