"""Ingest's pages: the coverage report (HTML at /coverage/, JSON at /api/v1/coverage).

Login is enforced by the global middleware (session for the page, session or
bearer token for the API).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .coverage import CoverageReport, collect
from .prometheus import PrometheusClient, PrometheusError


def _report() -> tuple[CoverageReport | None, str]:
    client = PrometheusClient()
    try:
        return collect(client), ""
    except PrometheusError as exc:
        return None, f"Prometheus at {client.url} could not be queried: {exc}"


@require_GET
def coverage_page(request: HttpRequest) -> HttpResponse:
    """The coverage report as a page (an error banner when Prometheus is unreachable)."""
    report, error = _report()
    context = {"title": "Coverage", "report": report, "error": error}
    return render(request, "ingest/coverage.html", context, status=200 if report else 503)


@require_GET
def coverage_json(request: HttpRequest) -> JsonResponse:
    """The coverage report as JSON; 503 with ``{"error": ...}`` when Prometheus is unreachable."""
    report, error = _report()
    if report is None:
        return JsonResponse({"error": "prometheus_unavailable", "detail": error}, status=503)
    return JsonResponse(report.as_dict())
