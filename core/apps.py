from __future__ import annotations

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Auth, health and operational plumbing shared by every app."""

    name = "core"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, metrics  # noqa: F401 - registers checks and Celery signal handlers
