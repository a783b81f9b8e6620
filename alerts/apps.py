from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    """Evaluates rules and delivers notifications."""

    name = "alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.metrics import register_collector

        from .metrics import EvaluationCollector

        register_collector(EvaluationCollector())
