"""PagerDuty Events API v2: one trigger, acknowledge or resolve event per alert, ``dedup_key`` = fingerprint.

Format from PagerDuty's own docs (github.com/PagerDuty/developer-docs,
docs/events-API-v2/02-Trigger-Events.md and 04-Resolve-Events.md): POST to
``https://events.pagerduty.com/v2/enqueue`` with ``routing_key``, ``event_action``,
``dedup_key`` (at most 255 characters) and, for a trigger, ``payload`` with
``summary`` (at most 1,024), ``source``, ``severity`` (critical, error, warning,
info), ``timestamp``, ``class``, ``group``, ``custom_details``, plus ``links``.
The routing key is the channel's secret (write-only in the admin, shown masked).
A re-sent trigger with the same ``dedup_key`` updates the open alert, so
retrying a group whose first events already went through is harmless. An alert
acknowledged in ClusterWatch is sent as an ``acknowledge`` event (01-Overview.md's
Acknowledge example: ``routing_key``, ``dedup_key``, ``event_action`` only), so PagerDuty
stops escalating it.
"""

from __future__ import annotations

from typing import Any

from .base import HttpTransport
from .payloads import AlertPayload, WebhookMessage

DEFAULT_URL = "https://events.pagerduty.com/v2/enqueue"
MAX_SUMMARY = 1024
MAX_DEDUP_KEY = 255
SEVERITIES = {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}
FALLBACK_SEVERITY = "error"  # PagerDuty refuses any other value


def severity(alert: AlertPayload) -> str:
    """The alert's severity label mapped to one PagerDuty accepts."""
    return SEVERITIES.get(alert["labels"].get("severity", ""), FALLBACK_SEVERITY)


def links(alert: AlertPayload) -> list[dict[str, str]]:
    """Links to the alert's page and, when known, its node and run."""
    notes = alert["annotations"]
    found = [{"href": alert["generatorURL"], "text": "Alert in ClusterWatch"}]
    if notes.get("node_url"):
        found.append({"href": notes["node_url"], "text": f"Node {alert['labels'].get('node')}"})
    if notes.get("run_url"):
        found.append({"href": notes["run_url"], "text": f"Run {notes.get('run', '')}".strip()})
    return found


def summary(alert: AlertPayload) -> str:
    """``<alertname>: <summary>``, cut to PagerDuty's limit."""
    name = alert["labels"].get("alertname", "alert")
    text = f"{name}: {alert['annotations'].get('summary') or name}"
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def event(alert: AlertPayload, routing_key: str, message: WebhookMessage) -> dict[str, Any]:
    """The Events API v2 body for one alert: a trigger while it fires, else a resolve."""
    acked = alert["status"] == "firing" and bool(alert["annotations"].get("acknowledged"))
    action = "acknowledge" if acked else "trigger" if alert["status"] == "firing" else "resolve"
    body: dict[str, Any] = {
        "routing_key": routing_key,
        "event_action": action,
        "dedup_key": alert["fingerprint"][:MAX_DEDUP_KEY],
    }
    if action != "trigger":
        return body
    labels = alert["labels"]
    body["payload"] = {
        "summary": summary(alert),
        "source": labels.get("node") or labels.get("leaf_switch") or "clusterwatch",
        "severity": severity(alert),
        "timestamp": alert["startsAt"],
        "class": labels.get("alertname", ""),
        "group": message["groupKey"],
        "custom_details": {"labels": labels, "annotations": alert["annotations"]},
    }
    body["links"] = links(alert)
    body["client"] = "ClusterWatch"
    body["client_url"] = message["externalURL"]
    return body


class PagerDutyTransport(HttpTransport):
    """POSTs one event per alert of the group to the channel's events URL."""

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        code = 202
        url = self.target.url or DEFAULT_URL
        for alert in message["alerts"]:
            code = self.post_json(url, event(alert, self.target.secret, message))
        return code
