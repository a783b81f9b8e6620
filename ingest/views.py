"""Ingest's pages: the coverage report (HTML at /coverage/, JSON at /api/v1/coverage).

Login is enforced by the global middleware (session for the page, session or
bearer token for the API).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .coverage import CoverageReport, collect
from .prometheus import PrometheusClient, PrometheusError, PrometheusUnavailable


class BudgetedClient(PrometheusClient):
    """A client whose queries together finish within ``budget`` seconds (a page must answer).

    Each request gets what is left of the budget as its deadline and socket timeout; the
    error of the query that ran out names it (``PrometheusClient._body``).
    """

    def __init__(self, budget: float) -> None:
        super().__init__(timeout=budget, deadline=budget)
        self.ends_at = time.monotonic() + budget

    def _data(self, endpoint: str, form: dict[str, object], method: str = "POST") -> object:
        left = self.ends_at - time.monotonic()
        if left <= 0:
            query = str(form.get("query", endpoint))[:200]
            raise self._error(PrometheusUnavailable, f"no time left for query {query}")
        self.deadline = left
        self.connection._timeout = left
        return super()._data(endpoint, form, method)


def _report() -> tuple[CoverageReport | None, str]:
    client = BudgetedClient(settings.COVERAGE_DEADLINE_SECONDS)
    try:
        report = collect(client)
    except PrometheusError as exc:
        return None, f"Prometheus could not be queried: {exc}"
    report.prometheus = client.shown_url  # never the credentials PROMETHEUS_URL may carry
    return report, ""


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
