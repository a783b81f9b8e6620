"""Helpers for the notification tests: alert rows, channels, flushing and sending."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from alerts.models import Alert, NotificationChannel, Outbox, OutboxStatus
from alerts.notify import outbox, services

# Flush times lie in the past so the rows they write are due at once.
T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
STARTED = datetime(2026, 5, 1, 9, 55, tzinfo=UTC)
SECRET = "webhook-secret-0123456789"


def make_alert(
    node: str,
    rule: str = "ib_port_errors",
    state: str = "firing",
    severity: str = "critical",
    **extra: Any,
) -> Alert:
    """One alert row as the rules engine writes it."""
    flags = {name: extra.pop(name) for name in ("silenced", "inhibited") if name in extra}
    labels = {"alertname": rule, "severity": severity, "node": node, **extra}
    fingerprint = hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()
    return Alert.objects.create(
        rule=rule,
        fingerprint=fingerprint,
        labels=labels,
        node=node,
        severity=severity,
        state=state,
        value=130.0,
        context={"symbol_errors_per_hour": 130},
        summary=f"{node}: 130 symbol errors/hour",
        pending_since=STARTED - timedelta(minutes=1),
        firing_at=STARTED,
        last_match_at=T0,
        resolved_at=T0 if state == "resolved" else None,
        **flags,
    )


def resolve(alert: Alert, at: datetime = T0) -> None:
    """The rules engine resolves an alert."""
    alert.state, alert.resolved_at = "resolved", at
    alert.save(update_fields=["state", "resolved_at"])


def make_channel(kind: str, url: str, **fields: Any) -> NotificationChannel:
    """A channel with short, explicit intervals."""
    defaults: dict[str, Any] = {
        "name": f"{kind}-ops",
        "min_severity": "info",
        "group_wait": timedelta(seconds=30),
        "group_interval": timedelta(minutes=5),
        "repeat_interval": timedelta(hours=4),
        "secret": SECRET if kind == "webhook" else "",
    }
    return NotificationChannel.objects.create(kind=kind, url=url, **{**defaults, **fields})


def flush_at(seconds: float) -> list[int]:
    """Flush every channel as if it were ``seconds`` after T0."""
    return services.flush(T0 + timedelta(seconds=seconds))


def send_all(timeout: float = 15.0) -> None:
    """Deliver until nothing is waiting (retries included), as the worker would."""
    deadline = time.monotonic() + timeout
    waiting = Outbox.objects.filter(status__in=[OutboxStatus.PENDING, OutboxStatus.SENDING])
    while waiting.exists():
        for outbox_id in outbox.due_ids():
            outbox.deliver(outbox_id)
        if time.monotonic() > deadline:
            raise TimeoutError("notifications still waiting")
        time.sleep(0.02)


def rfc3339(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
