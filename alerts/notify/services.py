"""Deciding what to notify: read alerts, group them per channel, write outbox rows.

This runs on its own schedule (``flush_notifications``), like Alertmanager's
aggregation groups: it only reads ``Alert`` rows, which the rules engine owns.
Each channel is flushed in its own transaction under a row lock, so two
overlapping flushes never write the same notification twice; the outbox key
(channel, group, sequence) makes that a database guarantee too.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..attribution import alert_hurts
from ..models import (
    Alert,
    AlertState,
    ChannelKind,
    NotificationChannel,
    NotificationGroup,
    Outbox,
)
from ..watchdog import watchdog_view
from . import silence_mirror
from .forwarding import decide_forwarding
from .grouping import (
    AlertView,
    Decision,
    GroupState,
    decide,
    group_alerts,
    group_key,
    group_labels,
)
from .messages import ALERT_PATH, NODE_PATH, RUN_PATH, build_message, page_url, rfc3339


def _context_text(context: dict[str, Any]) -> str:
    pairs = [(k, v) for k, v in sorted(context.items()) if isinstance(v, str | int | float)]
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in pairs)


def annotations(alert: Alert, external_url: str, now: datetime | None = None) -> dict[str, str]:
    """What a notification says about an alert beyond its labels: summary, values, links."""
    labels = alert.labels
    notes = {"summary": alert.summary}
    if alert.value is not None:
        notes["value"] = f"{alert.value:g}"
    notes["context"] = _context_text(alert.context or {})
    if node := labels.get("node") or alert.node:
        notes["node_url"] = page_url(external_url, NODE_PATH, node=node)
    run = labels.get("run") or str((alert.context or {}).get("run") or "")
    if run:
        namespace = labels.get("namespace") or str((alert.context or {}).get("namespace") or "")
        notes["run"] = f"{namespace}/{run}" if namespace else run
        if namespace:
            notes["run_url"] = page_url(external_url, RUN_PATH, namespace=namespace, run=run)
    notes["hurts"] = "; ".join(run["text"] for run in alert_hurts(alert))
    notes.update(_triage_notes(alert, now))
    return {k: v for k, v in notes.items() if v}


def _triage(alert: Alert) -> Any:
    try:
        return alert.triage  # type: ignore[attr-defined, unused-ignore]
    except ObjectDoesNotExist:
        return None


def _triage_notes(alert: Alert, now: datetime | None = None) -> dict[str, str]:
    """``acknowledged`` (who, when, until, comment) and ``assignee``, when set."""
    triage = _triage(alert)
    if triage is None:
        return {}
    notes = {"assignee": triage.assignee.get_username() if triage.assignee else ""}
    if triage.is_acked(now) and triage.acked_at is not None:
        who = triage.acked_by.get_username() if triage.acked_by else "someone"
        text = f"by {who} at {rfc3339(triage.acked_at)}"
        if triage.ack_until:
            text += f" until {rfc3339(triage.ack_until)}"
        notes["acknowledged"] = text + (f": {triage.ack_comment}" if triage.ack_comment else "")
    return notes


def alert_view(alert: Alert, external_url: str, now: datetime | None = None) -> AlertView:
    """The notifier's view of one alert row (``now``: when an acknowledgement's "until" is judged)."""
    labels = {str(k): str(v) for k, v in alert.labels.items()}
    labels.setdefault("alertname", alert.rule)
    labels.setdefault("severity", alert.severity)
    if alert.node:
        labels.setdefault("node", alert.node)
    return AlertView(
        id=alert.id,
        fingerprint=alert.fingerprint,
        status="firing" if alert.state == AlertState.FIRING else "resolved",
        severity=alert.severity,
        labels=labels,
        annotations=annotations(alert, external_url, now),
        starts_at=alert.firing_at or alert.pending_since,
        ends_at=alert.resolved_at,
        generator_url=page_url(external_url, ALERT_PATH, id=alert.id),
        muted=alert.silenced or alert.inhibited,
        inhibited_by=_inhibitor(alert),
        acked=bool((triage := _triage(alert)) and triage.is_acked(now)),
    )


def _inhibitor(alert: Alert) -> str:
    if not alert.inhibited:
        return ""
    source = alert.inhibited_by
    return source.rule if source is not None else "unknown"


def forwards(channel: NotificationChannel) -> bool:
    """Whether the channel is an Alertmanager, sent every firing alert (``forwarding``)."""
    return channel.kind == ChannelKind.ALERTMANAGER


def flush(now: datetime | None = None) -> list[int]:
    """Flush every enabled channel; return the ids of the outbox rows written."""
    now = now or timezone.now()
    silence_mirror.sync(timezone.now())  # Alertmanager learns our silences (wall time) first
    ids: list[int] = []
    for channel_id in NotificationChannel.objects.filter(enabled=True).values_list("id", flat=True):
        ids += flush_channel(channel_id, now)
    return ids


def _candidate_alerts(
    groups: Iterable[NotificationGroup], external_url: str, now: datetime
) -> list[AlertView]:
    owed = {int(alert_id) for group in groups for alert_id in group.notified}
    rows = Alert.objects.filter(
        Q(state=AlertState.FIRING) | Q(id__in=owed, state=AlertState.RESOLVED)
    ).select_related("inhibited_by", "triage__acked_by", "triage__assignee")
    return [alert_view(alert, external_url, now) for alert in rows]


@transaction.atomic
def flush_channel(channel_id: int, now: datetime) -> list[int]:
    """Flush one channel's groups; return the ids of the outbox rows written."""
    channel = (
        NotificationChannel.objects.select_for_update(skip_locked=True)
        .filter(id=channel_id, enabled=True)
        .first()
    )
    if channel is None:
        return []  # disabled, or another flush holds it
    groups = {group.key_hash: group for group in channel.groups.all()}
    external_url = settings.EXTERNAL_URL
    written: list[int] = []
    candidates = _candidate_alerts(groups.values(), external_url, now)
    if channel.watchdog and (alive := watchdog_view(now, external_url)) is not None:
        candidates.append(alive)
    members_by_key = group_alerts(candidates, channel.route())
    for key, members in members_by_key.items():
        group = groups.pop(_hash(key), None)
        if group is None and not any(_starts_group(channel, a) for a in members):
            continue
        group = group or NotificationGroup.objects.create(
            channel=channel,
            key=key,
            key_hash=_hash(key),
            labels=group_labels(members[0], channel.route().group_by),
            first_seen_at=now,
        )
        written += _apply(channel, group, members, now)
    for group in groups.values():  # groups none of whose alerts are left
        written += _apply(channel, group, [], now)
    return written


def _starts_group(channel: NotificationChannel, alert: AlertView) -> bool:
    return alert.status == "firing" and (forwards(channel) or not alert.muted)


def _decide(
    channel: NotificationChannel, state: GroupState, members: list[AlertView], now: datetime
) -> Decision:
    if forwards(channel):
        resend = timedelta(seconds=settings.ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS)
        return decide_forwarding(state, members, resend, now)
    return decide(state, members, channel.timing(), now, channel.send_resolved, channel.notify_acks)


def _apply(
    channel: NotificationChannel, group: NotificationGroup, members: list[AlertView], now: datetime
) -> list[int]:
    state = GroupState(group.first_seen_at, group.last_sent_at, dict(group.notified))
    decision = _decide(channel, state, members, now)
    written = [_write_outbox(channel, group, decision, now)] if decision.send else []
    if decision.finished:
        group.delete()
    elif decision.notified != group.notified or decision.send:
        group.notified = decision.notified
        group.save(update_fields=["notified", "last_sent_at", "sequence"])
    return written


def _write_outbox(
    channel: NotificationChannel, group: NotificationGroup, decision: Decision, now: datetime
) -> int:
    group.sequence += 1
    group.last_sent_at = now
    # Alertmanager takes every alert; Slack cuts when rendering and counts them all.
    uncut = forwards(channel) or channel.kind == ChannelKind.SLACK
    max_alerts = None if uncut else settings.ALERTS_NOTIFY_MAX_ALERTS
    message = build_message(
        channel.name, group.key, group.labels, decision.send, settings.EXTERNAL_URL, max_alerts
    )
    row = Outbox.objects.create(
        key=f"group:{channel.id}:{group.id}:{group.sequence}",
        channel=channel,
        group=group,
        payload=message,
        next_attempt_at=now,
    )
    return row.id


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def write_test_notification(channel: NotificationChannel, requested_by: str) -> Outbox:
    """An outbox row holding a one-alert test message for ``channel``."""
    now = timezone.now()
    test_alert = AlertView(
        id=0,
        fingerprint="test",
        status="firing",
        severity="info",
        labels={"alertname": "clusterwatch_test", "severity": "info", "channel": channel.name},
        annotations={
            "summary": f"Test notification from ClusterWatch, requested by {requested_by}."
        },
        starts_at=now,
        ends_at=None,
        generator_url=settings.EXTERNAL_URL,
    )
    labels = {"alertname": "clusterwatch_test"}
    message = build_message(
        channel.name,
        group_key(labels),
        labels,
        [test_alert],
        settings.EXTERNAL_URL,
        1,
    )
    return Outbox.objects.create(
        key=f"test:{channel.id}:{uuid.uuid4()}",
        channel=channel,
        payload=message,
        next_attempt_at=now,
    )
