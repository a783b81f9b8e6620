from __future__ import annotations

from django.apps import AppConfig


class IngestConfig(AppConfig):
    """Pulls exporter data from Prometheus into Postgres."""

    name = "ingest"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.metrics import register_collector

        from .health import IngestCollector

        register_collector(IngestCollector())
