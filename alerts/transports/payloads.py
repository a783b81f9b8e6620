"""Typed payloads that cross the process boundary, defined once.

The canonical notification is the Alertmanager webhook v4 message: the outbox
stores it, the generic webhook sends it as is, and the Slack and Alertmanager
transports render their own bodies from it.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

AlertStatus = Literal["firing", "resolved"]

# Alertmanager's encoding of "no end time" in webhook payloads.
ZERO_TIME = "0001-01-01T00:00:00Z"


class AlertPayload(TypedDict):
    """One alert inside a webhook v4 message."""

    status: AlertStatus
    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: str
    generatorURL: str
    fingerprint: str


class WebhookMessage(TypedDict):
    """Alertmanager webhook v4 message: one notification for one alert group."""

    receiver: str
    status: AlertStatus
    alerts: list[AlertPayload]
    groupLabels: dict[str, str]
    commonLabels: dict[str, str]
    commonAnnotations: dict[str, str]
    externalURL: str
    version: Literal["4"]
    groupKey: str
    truncatedAlerts: int


class PostableAlert(TypedDict):
    """One element of the JSON list Alertmanager accepts at ``POST /api/v2/alerts``."""

    labels: dict[str, str]
    annotations: dict[str, str]
    startsAt: str
    endsAt: NotRequired[str]
    generatorURL: str


class SlackMessage(TypedDict):
    """A Slack incoming-webhook body: fallback text plus Block Kit blocks."""

    text: str
    blocks: list[dict[str, Any]]
