"""Work a web worker does once at start, so its first viewers do not wait for it."""

from __future__ import annotations

from django.template.loader import get_template

from . import charts

#: Compiled once and kept by the cached template loader (DEBUG off).
PAGES = (
    "dashboard/overview.html",
    "dashboard/fabric.html",
    "dashboard/node_detail.html",
    "dashboard/node_list.html",
    "dashboard/alert_list.html",
)


def warm_up() -> None:
    """Plotly layouts of every figure shape, and the page templates compiled."""
    charts.build_layouts()
    for page in PAGES:
        get_template(page)
