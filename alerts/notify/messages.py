"""Building the canonical notification (a webhook v4 message) from alert views: pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from urllib.parse import quote

from ..transports.payloads import ZERO_TIME, AlertPayload, WebhookMessage
from .grouping import AlertView

# Pages a notification links to, relative to EXTERNAL_URL (one place to change them).
NODE_PATH = "/nodes/{node}/"
RUN_PATH = "/runs/{namespace}/{run}/"
ALERT_PATH = "/admin/alerts/alert/{id}/change/"


def rfc3339(moment: datetime | None) -> str:
    """UTC RFC 3339 time, Alertmanager's zero time when there is none."""
    if moment is None:
        return ZERO_TIME
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def page_url(external_url: str, path: str, **parts: str | int) -> str:
    """An absolute link to one of the product's pages; label values are URL-quoted."""
    return external_url.rstrip("/") + path.format(
        **{k: quote(str(v), safe="") for k, v in parts.items()}
    )


def alert_payload(alert: AlertView) -> AlertPayload:
    """One alert of a webhook v4 message."""
    return AlertPayload(
        status=alert.status,
        labels=dict(alert.labels),
        annotations=dict(alert.annotations),
        startsAt=rfc3339(alert.starts_at),
        endsAt=rfc3339(alert.ends_at) if alert.status == "resolved" else ZERO_TIME,
        generatorURL=alert.generator_url,
        fingerprint=alert.fingerprint,
    )


def _common(items: Sequence[dict[str, str]]) -> dict[str, str]:
    if not items:
        return {}
    first = items[0]
    return {k: v for k, v in first.items() if all(other.get(k) == v for other in items[1:])}


def build_message(
    receiver: str,
    key: str,
    group_labels: dict[str, str],
    alerts: Sequence[AlertView],
    external_url: str,
    max_alerts: int | None,
) -> WebhookMessage:
    """The notification for one group: firing alerts first, cut to ``max_alerts``.

    Common labels and annotations are computed over every alert of the group,
    including those cut; ``truncatedAlerts`` says how many were cut.
    """
    ordered = sorted(alerts, key=lambda a: (a.status != "firing", a.labels.get("node", ""), a.id))
    payloads = [alert_payload(a) for a in ordered]
    kept = payloads if max_alerts is None else payloads[:max_alerts]
    return WebhookMessage(
        receiver=receiver,
        status="firing" if any(a.status == "firing" for a in alerts) else "resolved",
        alerts=kept,
        groupLabels=dict(group_labels),
        commonLabels=_common([p["labels"] for p in payloads]),
        commonAnnotations=_common([p["annotations"] for p in payloads]),
        externalURL=external_url,
        version="4",
        groupKey=key,
        truncatedAlerts=len(payloads) - len(kept),
    )
