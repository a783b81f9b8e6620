"""Alertmanager: forwards alerts to ``POST {url}/api/v2/alerts``.

Alertmanager does its own grouping and routing; it only needs each alert's
labels, annotations and times. Resolutions carry ``endsAt``. Firing alerts are
sent without ``endsAt``, so Alertmanager resolves them itself after its
``resolve_timeout`` unless they are re-sent (the notifier re-sends them).
"""

from __future__ import annotations

from .base import HttpTransport
from .payloads import ZERO_TIME, AlertPayload, PostableAlert, WebhookMessage


def postable(alert: AlertPayload) -> PostableAlert:
    """One webhook alert as Alertmanager's API v2 wants it."""
    body = PostableAlert(
        labels=alert["labels"],
        annotations=alert["annotations"],
        startsAt=alert["startsAt"],
        generatorURL=alert["generatorURL"],
    )
    if alert["status"] == "resolved" and alert["endsAt"] != ZERO_TIME:
        body["endsAt"] = alert["endsAt"]
    return body


class AlertmanagerTransport(HttpTransport):
    """POSTs the group's alerts as a JSON list."""

    def notify(self, message: WebhookMessage) -> int:
        url = self.target.url.rstrip("/") + "/api/v2/alerts"
        return self.post_json(url, [postable(alert) for alert in message["alerts"]])
