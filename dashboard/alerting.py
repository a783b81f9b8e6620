"""The dashboard's read-only view of alerts (``alerts.models.Alert``), as plain dicts.

Guarded: when the alerts app has no ``Alert`` model (an install without it),
every function answers empty and pages say alerting is not set up.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import Count, Model, Q, QuerySet

SEVERITY_RANK = {"critical": 2, "warning": 1, "info": 0}
STATES = ("firing", "pending", "silenced", "resolved")


def _model() -> type[Model] | None:
    try:
        return apps.get_model("alerts", "Alert")
    except LookupError:
        return None


def available() -> bool:
    """Whether alerting is installed."""
    return _model() is not None


def _row(alert: Any) -> dict[str, Any]:
    labels = alert.labels or {}
    return {
        "id": alert.pk,
        "name": alert.rule,
        "severity": alert.severity,
        "state": alert.state,
        "silenced": alert.silenced,
        "node": alert.node or labels.get("node") or "",
        "namespace": labels.get("namespace") or "",
        "job": labels.get("run") or "",
        "since": alert.started_at or alert.pending_since,
        "until": alert.resolved_at,
        "summary": alert.summary,
    }


def _queryset() -> QuerySet | None:
    model = _model()
    return None if model is None else model.objects.exclude(state="inactive")


def alerts(
    state: str | None = None,
    severity: str | None = None,
    search: str | None = None,
    limit: int = 500,
) -> list[dict[str, Any]]:
    """Alerts matching the filters, newest first (``state="silenced"``: firing but silenced)."""
    qs = _queryset()
    if qs is None:
        return []
    if state == "silenced":
        qs = qs.filter(state="firing", silenced=True)
    elif state == "firing":
        qs = qs.filter(state="firing", silenced=False)
    elif state:
        qs = qs.filter(state=state)
    if severity:
        qs = qs.filter(severity=severity)
    if search:
        qs = qs.filter(
            Q(node__icontains=search) | Q(rule__icontains=search) | Q(summary__icontains=search)
        )
    return [_row(a) for a in qs.order_by("-pending_since")[:limit]]


def firing() -> list[dict[str, Any]]:
    """Firing alerts, silenced ones included (marked), worst first."""
    qs = _queryset()
    if qs is None:
        return []
    rows = [_row(a) for a in qs.filter(state="firing").order_by("-pending_since")[:500]]
    return sorted(rows, key=lambda a: (a["silenced"], -SEVERITY_RANK.get(a["severity"], 0)))


def node_marks() -> dict[str, dict[str, Any]]:
    """Node name → {"state": critical|warning|silenced, "alerts": [rule names]} from firing alerts."""
    marks: dict[str, dict[str, Any]] = {}
    for alert in firing():
        if not alert["node"]:
            continue
        mark = marks.setdefault(alert["node"], {"state": "silenced", "alerts": []})
        mark["alerts"].append(alert["name"])
        if not alert["silenced"]:
            level = "critical" if alert["severity"] == "critical" else "warning"
            if mark["state"] != "critical":
                mark["state"] = level
    return marks


def for_node(node: str, limit: int = 100) -> list[dict[str, Any]]:
    """The node's alert history (all states but never-fired), newest first."""
    qs = _queryset()
    return (
        []
        if qs is None
        else [_row(a) for a in qs.filter(node=node).order_by("-pending_since")[:limit]]
    )


def counts() -> dict[str, int]:
    """Alerts per state: firing (not silenced), pending, silenced, resolved — one query."""
    qs = _queryset()
    if qs is None:
        return dict.fromkeys(STATES, 0)
    return qs.aggregate(
        firing=Count("pk", filter=Q(state="firing", silenced=False)),
        pending=Count("pk", filter=Q(state="pending")),
        silenced=Count("pk", filter=Q(state="firing", silenced=True)),
        resolved=Count("pk", filter=Q(state="resolved")),
    )
