"""The runs app: owns the run tables (``runs_*``) and the run domain."""

from __future__ import annotations

from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Training runs: jobs, pods, node assignments, events, checkpoints, goodput, the advisor."""

    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"
