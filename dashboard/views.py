"""Dashboard pages: thin views, data from selectors, figures from charts."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def overview(request: HttpRequest) -> HttpResponse:
    """The landing page: cluster state at a glance."""
    return render(request, "dashboard/overview.html", {"title": "Overview"})
