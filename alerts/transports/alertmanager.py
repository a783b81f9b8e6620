"""Alertmanager: forwards alerts to ``POST {url}/api/v2/alerts``, mirrors silences.

Alertmanager does its own grouping and routing; it only needs each alert's
labels, annotations and times. Resolutions carry ``endsAt``. Firing alerts are
sent without ``endsAt``: Alertmanager resolves an alert on its own once it has
not been re-sent for its ``resolve_timeout``, so the notifier re-sends every
firing alert, silenced or inhibited too, until it really resolves.

Auth and TLS come from ``ALERTMANAGER_BEARER_TOKEN`` / ``ALERTMANAGER_BASIC_AUTH`` /
``ALERTMANAGER_HEADERS`` / ``ALERTMANAGER_CA_BUNDLE``, like the Prometheus backend's.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from django.conf import settings

from .base import HttpTransport, TransportError, json_body
from .payloads import ZERO_TIME, AlertPayload, PostableAlert, WebhookMessage

SILENCE_NOT_FOUND = "silence not found"


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


def auth_headers() -> dict[str, str]:
    """Headers for the Alertmanager API: extra headers, bearer token or basic auth."""
    headers = dict(settings.ALERTMANAGER_HEADERS)
    if settings.ALERTMANAGER_BEARER_TOKEN:
        headers["Authorization"] = f"Bearer {settings.ALERTMANAGER_BEARER_TOKEN}"
    elif settings.ALERTMANAGER_BASIC_AUTH:
        token = base64.b64encode(settings.ALERTMANAGER_BASIC_AUTH.encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return headers


class AlertmanagerTransport(HttpTransport):
    """POSTs the group's alerts as a JSON list; creates and expires silences."""

    def request_headers(self) -> dict[str, str]:
        return auth_headers()

    def ca_bundle(self) -> str:
        return settings.ALERTMANAGER_CA_BUNDLE

    def api(self, path: str) -> str:
        """An absolute URL of Alertmanager's v2 API."""
        return self.target.url.rstrip("/") + "/api/v2/" + path

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        return self.post_json(self.api("alerts"), [postable(alert) for alert in message["alerts"]])

    def put_silence(self, silence: dict[str, Any]) -> str:
        """Create or update a silence (``id`` in the body updates); return its id."""
        answer = self.send(self.api("silences"), json_body(silence), {})
        self.check(answer)
        try:
            return str(json.loads(answer.text)["silenceID"])
        except (ValueError, KeyError, TypeError):
            raise TransportError(f"unexpected answer: {answer.text[:200]}") from None

    def expire_silence(self, silence_id: str) -> None:
        """Expire a silence now; one that Alertmanager no longer knows counts as expired.

        Alertmanager 0.25 answers an unknown id with 500 "silence not found" (checked).
        """
        answer = self.send(self.api(f"silence/{silence_id}"), b"", {}, method="DELETE")
        if answer.status != 404 and SILENCE_NOT_FOUND not in answer.text:
            self.check(answer)
