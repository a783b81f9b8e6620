"""What an Alertmanager channel sends: every firing alert, muted or not, until it resolves. Pure.

Alertmanager keeps an alert firing only while it is re-sent: after its
``resolve_timeout`` without news it resolves the alert itself and notifies
"resolved". So, unlike the other channels, an Alertmanager channel is sent every
firing alert, silenced and inhibited ones included, at least every
``ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS``, and a change (new, resolved) at
once: Alertmanager does its own group_wait / group_interval.

Silences are mirrored into Alertmanager (``silence_mirror``), so a silenced alert
is silenced there too. An inhibited alert carries an ``inhibited_by`` label (the
inhibiting alert's name) that an Alertmanager route can send to a null receiver.
Labels are an alert's identity in Alertmanager, so when inhibition starts or ends
the alert is sent under its new labels and its old label set is resolved
explicitly in the same request, never left to time out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from .grouping import FIRING, AlertView, Decision, GroupState

INHIBITED_BY = "inhibited_by"  # the label an inhibited alert carries in Alertmanager
INHIBITED_PREFIX = "inhibited_by="


def identity(alert: AlertView) -> str:
    """How the alert was sent: ``firing``, or ``inhibited_by=<alertname>``."""
    return INHIBITED_PREFIX + alert.inhibited_by if alert.inhibited_by else FIRING


def as_sent(alert: AlertView, sent_as: str) -> AlertView:
    """The alert with the labels it has in Alertmanager when sent as ``sent_as``."""
    labels = {k: v for k, v in alert.labels.items() if k != INHIBITED_BY}
    if sent_as.startswith(INHIBITED_PREFIX):
        labels[INHIBITED_BY] = sent_as.removeprefix(INHIBITED_PREFIX)
    return replace(alert, labels=labels, muted=False)


def _ended(alert: AlertView, sent_as: str, now: datetime) -> AlertView:
    ends_at = alert.ends_at if alert.status == "resolved" and alert.ends_at else now
    return replace(as_sent(alert, sent_as), status="resolved", ends_at=ends_at)


def decide_forwarding(
    state: GroupState, alerts: Sequence[AlertView], resend: timedelta, now: datetime
) -> Decision:
    """Which alerts to forward to Alertmanager now (firing, and label sets to end)."""
    firing = [a for a in alerts if a.status == "firing"]
    current = {str(a.id): identity(a) for a in firing}
    ended = [
        _ended(a, state.notified[str(a.id)], now)
        for a in alerts
        if str(a.id) in state.notified and current.get(str(a.id)) != state.notified[str(a.id)]
    ]
    if not firing and not ended:
        return Decision([], {}, True)
    changed = bool(ended) or current != state.notified
    due = state.last_sent_at is None or now >= state.last_sent_at + resend
    if not changed and not due:
        return Decision([], current, False)
    send = [as_sent(a, identity(a)) for a in firing] + ended
    return Decision(send, current, not current)
