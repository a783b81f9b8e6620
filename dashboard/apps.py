"""Pages, charts and JSON endpoints; reads ingest, runs and alerts, owns no tables."""

from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The web UI: overview, fabric, nodes, runs, queues, alerts."""

    name = "dashboard"

    def ready(self) -> None:
        from .api import schema, schema_alerts

        schema.register()
        schema_alerts.register()
