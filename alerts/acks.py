"""Acknowledging and assigning alerts: validation, the write, and its audit row.

An acknowledgement says someone is on it: notification channels stop repeating the alert
(``repeat_interval``) until it resolves or the acknowledgement's ``until`` passes; the alert
still resolves, and a fault that comes back opens a new, unacknowledged alert. Channels with
``notify_acks`` are told (``alerts.notify.grouping``). Every change writes an ``AlertAudit``
row, as silences write ``SilenceAudit``; invalid input raises ``AckError`` naming the field
and nothing is written.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.validation import InputError, check_text

from .models import ACTIVE_STATES, Alert, AlertAudit, AlertTriage

MAX_COMMENT_CHARS = 2000
#: An acknowledgement's ``until`` lies within now .. now + this.
MAX_ACK_AHEAD = timedelta(days=30)
#: The model permission every write needs (superusers hold it; staff alone is not enough).
PERMISSION = "alerts.change_alerttriage"


class AckError(ValueError):
    """Invalid acknowledgement or assignment input; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.status = status


def _comment(comment: Any) -> str:
    try:
        return check_text(comment or "", "comment", max_length=MAX_COMMENT_CHARS) or ""
    except InputError as exc:
        raise AckError(exc.field, exc.detail) from None


def _until(until: datetime | None, now: datetime) -> datetime | None:
    if until is None:
        return None
    if until <= now:
        raise AckError("until", "must lie in the future")
    if until > now + MAX_ACK_AHEAD:
        raise AckError("until", f"at most {MAX_ACK_AHEAD.days} days ahead")
    return until


def user_named(username: Any, field: str = "assignee") -> Any:
    """The active user called ``username``; AckError when there is none."""
    if not isinstance(username, str) or not username:
        raise AckError(field, "expected a user name")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise AckError(field, f"no active user {username[:150]!r}")
    return user


def _triage(alert: Alert) -> AlertTriage:
    return AlertTriage.objects.select_for_update().get_or_create(alert=alert)[0]


def _audit(alert: Alert, user: Any, action: str, now: datetime, **detail: Any) -> None:
    AlertAudit.objects.create(
        alert=alert, alert_ref=alert.pk, ts=now, user=user, action=action, detail=detail
    )
    transaction.on_commit(lambda: _publish(now))


def _publish(now: datetime) -> None:
    """Tell live pages (alerts, overview) that an alert changed hands."""
    from core.live import publish

    from .events import alerts_changed
    from .selectors import alert_counts_by_state

    counts = alert_counts_by_state()
    publish(alerts_changed(firing=counts["firing"], pending=counts["pending"],
                           silenced=counts["silenced"], inhibited=counts["inhibited"], changes=1,
                           evaluated_at=now.isoformat()))  # fmt: skip


@transaction.atomic
def acknowledge(
    alert: Alert,
    user: Any,
    comment: str = "",
    until: datetime | None = None,
    now: datetime | None = None,
) -> AlertTriage:
    """Acknowledge a pending or firing alert as ``user`` (again: replaces the previous one)."""
    now = now or timezone.now()
    if alert.state not in ACTIVE_STATES:
        raise AckError("alert", f"alert {alert.pk} is {alert.state}: only active alerts", 409)
    comment, until = _comment(comment), _until(until, now)
    triage = _triage(alert)
    triage.acked_by, triage.acked_at, triage.ack_comment, triage.ack_until = (
        user, now, comment, until
    )  # fmt: skip
    triage.save()
    _audit(alert, user, AlertAudit.Action.ACKED, now, comment=comment,
           until=until.isoformat() if until else None)  # fmt: skip
    return triage


@transaction.atomic
def unacknowledge(alert: Alert, user: Any, now: datetime | None = None) -> AlertTriage:
    """Remove an alert's acknowledgement (repeat notifications resume)."""
    now = now or timezone.now()
    triage = _triage(alert)
    if triage.acked_at is None:
        raise AckError("alert", f"alert {alert.pk} is not acknowledged", 409)
    triage.acked_by, triage.acked_at, triage.ack_comment, triage.ack_until = None, None, "", None
    triage.save()
    _audit(alert, user, AlertAudit.Action.UNACKED, now)
    return triage


@transaction.atomic
def assign(alert: Alert, user: Any, assignee: Any, now: datetime | None = None) -> AlertTriage:
    """Assign an alert to ``assignee`` (a user, or None to unassign) as ``user``."""
    now = now or timezone.now()
    triage = _triage(alert)
    if assignee is None:
        if triage.assignee_id is None:
            raise AckError("assignee", f"alert {alert.pk} is not assigned", 409)
        previous = triage.assignee.get_username() if triage.assignee else None
        triage.assignee, triage.assigned_at = None, None
        triage.save()
        _audit(alert, user, AlertAudit.Action.UNASSIGNED, now, previous=previous)
        return triage
    triage.assignee, triage.assigned_at = assignee, now
    triage.save()
    _audit(alert, user, AlertAudit.Action.ASSIGNED, now, assignee=assignee.get_username())
    return triage


def triage_of(alert: Alert) -> AlertTriage | None:
    """The alert's acknowledgement and assignee row, if any."""
    return AlertTriage.objects.filter(alert=alert).select_related("acked_by", "assignee").first()


def serialize_triage(triage: AlertTriage | None, now: datetime | None = None) -> dict[str, Any]:
    """``{"acknowledged": {by, at, comment, until} | null, "assignee": name | null}``."""
    acked = triage is not None and triage.is_acked(now) and triage.acked_at is not None
    return {
        "acknowledged": {
            "by": triage.acked_by.get_username() if triage.acked_by else None,
            "at": triage.acked_at.isoformat(),
            "comment": triage.ack_comment,
            "until": triage.ack_until.isoformat() if triage.ack_until else None,
        }
        if acked and triage is not None and triage.acked_at is not None
        else None,
        "assignee": triage.assignee.get_username() if triage and triage.assignee else None,
    }
