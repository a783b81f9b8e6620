from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The web UI: overview, fabric, nodes, runs, queues, alerts."""

    name = "dashboard"
