"""Severity: the one definition of the levels and their order (routing, Slack, the dashboard)."""

from __future__ import annotations

from django.db import models


class Severity(models.TextChoices):
    """How bad an alert is; routing and notification styling key on it."""

    CRITICAL = "critical", "Critical"
    WARNING = "warning", "Warning"
    INFO = "info", "Info"


#: Higher is worse; an unknown severity ranks below every known one.
RANK: dict[str, int] = {Severity.INFO: 1, Severity.WARNING: 2, Severity.CRITICAL: 3}


def rank(severity: str) -> int:
    """The severity's place in the order info < warning < critical (0 when unknown)."""
    return RANK.get(severity, 0)
