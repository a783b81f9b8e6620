"""The read API of the alerts app, for its own API and admin and for the dashboard and runs pages.

Every function returns model instances or plain dicts and never writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import connection
from django.db.models import Count, Q, QuerySet

from core import clock

from .acks import serialize_triage
from .attribution import alert_hurts
from .models import (
    ACTIVE_STATES,
    Alert,
    AlertAudit,
    AlertEvent,
    AlertState,
    AlertTriage,
    Evaluation,
    Silence,
)
from .silences import matches_all, parse_matchers

#: The alerts page's tab of firing alerts that are silenced or inhibited (not a state).
SILENCED_TAB = "silenced"
HURT_FIELDS = ("namespace", "run", "queue", "cluster_queue", "team", "gpus", "nodes", "gpu_hours",
               "text")  # fmt: skip


def firing_alerts(*, include_muted: bool = True) -> QuerySet[Alert]:
    """Alerts firing now, newest first; ``include_muted=False`` drops silenced and inhibited ones."""
    qs = Alert.objects.filter(state=AlertState.FIRING).order_by("-firing_at")
    return qs if include_muted else qs.filter(silenced=False, inhibited=False)


def active_alerts() -> QuerySet[Alert]:
    """Alerts pending or firing now."""
    return Alert.objects.filter(state__in=ACTIVE_STATES)


def alerts(
    *, state: str | None = None, rule: str | None = None, node: str | None = None, limit: int = 500
) -> list[Alert]:
    """Alerts filtered by state, rule and node (newest first, at most ``limit``)."""
    qs = Alert.objects.exclude(state=AlertState.INACTIVE)
    if state:
        qs = qs.filter(state=state)
    if rule:
        qs = qs.filter(rule=rule)
    if node:
        qs = qs.filter(node=node)
    return list(qs.order_by("-pending_since", "-id")[:limit])


def alert_query(
    *,
    state: str | None = None,
    severity: str | None = None,
    rule: str | None = None,
    labels: dict[str, str] | None = None,
    search: str | None = None,
) -> QuerySet[Alert]:
    """Alerts for the alerts page, newest first: ``state`` is a tab (``firing``: firing and not
    muted; ``silenced``: firing and silenced or inhibited; ``pending``, ``resolved``), ``labels``
    exact label values (team, namespace, pool…), ``search`` a substring of node, rule or summary."""
    qs = Alert.objects.exclude(state=AlertState.INACTIVE)
    muted = Q(silenced=True) | Q(inhibited=True)
    if state == AlertState.FIRING:
        qs = qs.filter(state=AlertState.FIRING).exclude(muted)
    elif state == SILENCED_TAB:
        qs = qs.filter(muted, state=AlertState.FIRING)
    elif state:
        qs = qs.filter(state=state)
    if severity:
        qs = qs.filter(severity=severity)
    if rule:
        qs = qs.filter(rule=rule)
    for name, value in (labels or {}).items():
        qs = qs.filter(**{f"labels__{name}": value})
    if search:
        qs = qs.filter(
            Q(node__icontains=search) | Q(rule__icontains=search) | Q(summary__icontains=search)
        )
    return qs.select_related("triage__acked_by", "triage__assignee").order_by(
        "-pending_since", "-id"
    )


def alert_with_history(alert_id: int) -> tuple[Alert, list[AlertEvent], list[AlertAudit]] | None:
    """One alert with its transitions (oldest first) and its audit trail (newest first)."""
    alert = (
        Alert.objects.select_related("triage__acked_by", "triage__assignee", "silenced_by")
        .filter(pk=alert_id)
        .first()
    )
    if alert is None:
        return None
    audit = list(AlertAudit.objects.filter(alert_ref=alert_id).select_related("user"))
    return alert, alert_history(alert_id), audit


def _overlapping(qs: QuerySet[Alert], start: datetime, end: datetime) -> QuerySet[Alert]:
    return qs.filter(pending_since__lte=end).filter(
        Q(resolved_at__isnull=True) | Q(resolved_at__gte=start)
    )


def alert_by_id(alert_id: int) -> Alert | None:
    """One alert (None: no such alert)."""
    return Alert.objects.filter(pk=alert_id).first()


def alerts_for_run(
    nodes: Sequence[str], start: datetime, end: datetime, limit: int = 500
) -> list[Alert]:
    """Alerts on any of a run's nodes whose lifetime overlaps [start, end], oldest first.

    Pending, firing and resolved ones; never the inactive ones (a pending blip that never
    fired is no alert: drawn, it would last to the end of the run, for it has no resolved_at).
    """
    qs = Alert.objects.filter(node__in=list(nodes)).exclude(state=AlertState.INACTIVE)
    return list(_overlapping(qs, start, end).order_by("pending_since", "id")[:limit])


def alert_counts_by_state() -> dict[str, int]:
    """Alert rows per state, plus the firing ones that are muted (silenced or inhibited).

    ``{"firing", "pending", "resolved", "firing_muted", "silenced", "inhibited"}``:
    ``silenced`` / ``inhibited`` count active (pending or firing) alerts.
    """
    counts = dict.fromkeys(
        [AlertState.FIRING.value, AlertState.PENDING.value, AlertState.RESOLVED.value], 0
    )
    # order_by() clears any ordering: an ORDER BY column joins the GROUP BY and splits the groups.
    rows = Alert.objects.exclude(state=AlertState.INACTIVE).order_by().values("state")
    for row in rows.annotate(n=Count("id")):
        counts[row["state"]] = row["n"]
    muted = Q(silenced=True) | Q(inhibited=True)
    flags = active_alerts().aggregate(
        firing_muted=Count("id", filter=Q(state=AlertState.FIRING) & muted),
        silenced=Count("id", filter=Q(silenced=True)),
        inhibited=Count("id", filter=Q(inhibited=True)),
    )
    return {**counts, **flags}


def silence_page(offset: int, limit: int) -> tuple[list[Silence], int]:
    """``limit`` silences from ``offset``, newest first, and how many there are in all."""
    qs = Silence.objects.select_related("created_by").order_by("-starts_at", "-id")
    return list(qs[offset : offset + limit]), qs.count()


def silence_matches(silence: Silence) -> list[Alert]:
    """Pending or firing alerts the silence's matchers match now (whether or not it is active)."""
    matchers = parse_matchers(silence.matchers)
    return [a for a in active_alerts().order_by("node", "rule") if matches_all(matchers, a.labels)]


def serialize_alert(alert: Alert) -> dict[str, Any]:
    """The API shape of an alert."""
    return {
        "id": alert.pk,
        "rule": alert.rule,
        "state": alert.state,
        "severity": alert.severity,
        "labels": alert.labels,
        "node": alert.node or None,
        "started_at": alert.pending_since.isoformat(),
        "firing_at": alert.firing_at.isoformat() if alert.firing_at else None,
        "resolved_at": alert.resolved_at.isoformat() if alert.resolved_at else None,
        "value": alert.value,
        "summary": alert.summary,
        "silenced": alert.silenced,
        "inhibited": alert.inhibited,
        **serialize_triage(_triage(alert)),
        "hurts": [{k: run.get(k) for k in HURT_FIELDS} for run in alert_hurts(alert)],
    }


def _triage(alert: Alert) -> AlertTriage | None:
    try:
        return alert.triage  # type: ignore[attr-defined, unused-ignore]
    except ObjectDoesNotExist:
        return None


def serialize_silence(silence: Silence) -> dict[str, Any]:
    """The API shape of a silence."""
    now = clock.now()
    state = (
        "active" if silence.is_active(now) else "pending" if silence.starts_at > now else "expired"
    )
    return {
        "id": silence.pk,
        "matchers": silence.matchers,
        "starts_at": silence.starts_at.isoformat(),
        "ends_at": silence.ends_at.isoformat() if silence.ends_at else None,
        "until_resolved": silence.until_resolved,
        "comment": silence.comment,
        "created_by": silence.created_by.get_username() if silence.created_by else None,
        "state": state,
    }


def change_marker() -> str:
    """A value that changes whenever an alert, a silence or an evaluation does (a cache key part)."""
    tables = {model: model._meta.db_table for model in (Alert, Silence, Evaluation, AlertAudit)}
    with connection.cursor() as cursor:  # one round trip: this runs on every overview request
        cursor.execute(
            f"SELECT (SELECT max(updated_at)::text || count(*) FROM {tables[Alert]}), "
            f"(SELECT max(greatest(created_at, expired_at))::text || count(*) FROM {tables[Silence]}), "
            f"(SELECT max(started_at)::text FROM {tables[Evaluation]}), "
            f"(SELECT max(ts)::text FROM {tables[AlertAudit]})"
        )
        return "|".join(map(str, cursor.fetchone()))


def alert_history(alert_id: int) -> list[AlertEvent]:
    """The transitions of one alert, oldest first."""
    return list(AlertEvent.objects.filter(alert_id=alert_id).order_by("ts", "id"))
