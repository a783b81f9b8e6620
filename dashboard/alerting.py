"""The dashboard's read-only view of alerts, through ``alerts.selectors``, as plain dicts."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Page, Paginator

from alerts import selectors
from alerts.selectors import ACTIVE_STATES, AlertState
from alerts.severity import Severity, rank

from .choices import NodeState

#: The alerts page's tabs: states, and "silenced" (firing and muted).
SILENCED = selectors.SILENCED_TAB
STATES = (AlertState.FIRING.value, AlertState.PENDING.value, SILENCED, AlertState.RESOLVED.value)
#: How many alerts a filtered list looks through (severity and text filters apply in Python).
SCAN_LIMIT = 5000


def _triage(alert: Any) -> Any:
    try:
        return alert.triage
    except ObjectDoesNotExist:
        return None


def _row(alert: Any) -> dict[str, Any]:
    labels = alert.labels or {}
    triage = _triage(alert)
    acked = triage is not None and triage.is_acked()
    return {
        "active": alert.state in ACTIVE_STATES,
        "acked_by": (triage.acked_by.get_username() if triage.acked_by else "?") if acked else "",
        "assignee": triage.assignee.get_username() if triage and triage.assignee else "",
        "team": labels.get("team") or "",
        "pool": labels.get("pool") or "",
        "id": alert.pk,
        "name": alert.rule,
        "severity": alert.severity,
        "state": alert.state,
        "silenced": alert.silenced,
        "muted": alert.silenced or alert.inhibited,
        "node": alert.node or labels.get("node") or "",
        "namespace": labels.get("namespace") or "",
        "job": labels.get("run") or "",
        "since": alert.pending_since,
        "alerting_since": alert.firing_at,
        "until": alert.resolved_at,
        "summary": alert.summary,
    }


def _matches(alert: Any, state: str | None, severity: str | None, search: str | None) -> bool:
    muted = alert.silenced or alert.inhibited
    if state in (AlertState.FIRING, SILENCED) and muted != (state == SILENCED):
        return False
    if severity and alert.severity != severity:
        return False
    needle = (search or "").lower()
    return not needle or any(
        needle in (text or "").lower() for text in (alert.node, alert.rule, alert.summary)
    )


def alerts(
    state: str | None = None,
    severity: str | None = None,
    search: str | None = None,
    limit: int = 500,
) -> list[dict[str, Any]]:
    """Alerts matching the filters, newest first.

    ``state="firing"``: firing and neither silenced nor inhibited; ``state="silenced"``:
    firing but muted (silenced or inhibited) — the same split ``counts`` counts.
    """
    stored_state = AlertState.FIRING if state == SILENCED else state
    candidates = selectors.alerts(state=stored_state, limit=SCAN_LIMIT)
    return [_row(a) for a in candidates if _matches(a, state, severity, search)][:limit]


def change_marker() -> str:
    """Changes whenever alerts, silences or evaluations do."""
    return selectors.change_marker()


def firing() -> list[dict[str, Any]]:
    """Firing alerts, silenced ones included (marked), worst first."""
    rows = [_row(a) for a in selectors.firing_alerts()[:500]]
    return sorted(rows, key=lambda a: (a["silenced"], -rank(a["severity"])))


def node_marks(firing_rows: list[dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Node name → {"state": critical|warning|silenced, "alerts": [rule names]} from firing alerts.

    ``firing_rows``: ``firing()``'s answer when the caller already has it (one query less).
    """
    marks: dict[str, dict[str, Any]] = {}
    for alert in firing() if firing_rows is None else firing_rows:
        if not alert["node"]:
            continue
        mark = marks.setdefault(alert["node"], {"state": NodeState.SILENCED.value, "alerts": []})
        mark["alerts"].append(alert["name"])
        if not alert["silenced"]:
            critical = alert["severity"] == Severity.CRITICAL
            level = (NodeState.CRITICAL if critical else NodeState.WARNING).value
            if mark["state"] != NodeState.CRITICAL:
                mark["state"] = level
    return marks


def for_node(node: str, limit: int = 100) -> list[dict[str, Any]]:
    """The node's alert history (all states but never-fired), newest first."""
    return [_row(a) for a in selectors.alerts(node=node, limit=limit)]


def counts() -> dict[str, int]:
    """Alert rows per tab of the alerts page, counted as ``alerts(state=…)`` lists them.

    firing: firing, neither silenced nor inhibited; silenced: firing and muted;
    pending and resolved: every row in that state.
    """
    by_state = selectors.alert_counts_by_state()
    return {
        AlertState.FIRING.value: by_state[AlertState.FIRING] - by_state["firing_muted"],
        AlertState.PENDING.value: by_state[AlertState.PENDING],
        SILENCED: by_state["firing_muted"],
        AlertState.RESOLVED.value: by_state[AlertState.RESOLVED],
    }


def hardware(nodes: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Node name → {"verdict", "label", "reasons"} of the nodes whose GPUs are not healthy."""
    from alerts.hardware import hardware_verdicts

    return {
        node: {"verdict": v.verdict, "label": v.label, "reasons": list(v.reasons)}
        for node, v in hardware_verdicts(nodes).items()
    }


def maintenance_nodes() -> dict[str, dict[str, Any]]:
    """Node name → {"since", "by", "comment"} of every node in maintenance."""
    from alerts import maintenance

    return {node: _maintenance_row(m) for node, m in maintenance.in_maintenance().items()}


def maintenance_for(node: str) -> dict[str, Any]:
    """The node's maintenance state and the suggested commands (shown, never run)."""
    from alerts import maintenance

    current = maintenance.current(node)
    return {
        "active": _maintenance_row(current) if current else None,
        "commands": [{"when": c.when, "text": c.text} for c in maintenance.commands(node)],
    }


def _maintenance_row(row: Any) -> dict[str, Any]:
    user = row.started_by
    return {
        "since": row.started_at,
        "by": user.get_username() if user else "",
        "comment": row.comment,
        "silence": row.silence_id,
    }


#: Alerts per page of the alerts page.
PAGE_SIZE = 50
#: Label filters of the alerts page (exact values).
LABEL_FILTERS = ("team", "namespace", "pool")


def alert_page(filters: dict[str, Any], page: int | str | None) -> Page | None:
    """One page (``PAGE_SIZE`` rows, as dicts) of the alerts matching the page's filters."""
    qs = selectors.alert_query(
        state=filters.get("state") or None,
        severity=filters.get("severity") or None,
        rule=filters.get("rule") or None,
        labels={k: filters[k] for k in LABEL_FILTERS if filters.get(k)},
        search=filters.get("q") or None,
    )
    found = Paginator(qs, PAGE_SIZE).get_page(page)
    found.object_list = [_row(a) for a in found.object_list]  # type: ignore[misc]
    return found


def rule_names() -> list[str]:
    """Every registered rule id (for the rule filter)."""
    from alerts.rules import REGISTRY

    return sorted(REGISTRY)


def detail(alert_id: int) -> dict[str, Any] | None:
    """Everything the alert page shows: the alert, whom it hurts, its triage and history."""
    found = selectors.alert_with_history(alert_id)
    if found is None:
        return None
    from alerts.attribution import alert_hurts

    alert, events, audit = found
    triage = _triage(alert)
    return {
        **_row(alert),
        "alert": alert,
        "labels": sorted((alert.labels or {}).items()),
        "context": alert.context or {},
        "hurts": alert_hurts(alert),
        "triage": triage,
        "acked": triage is not None and triage.is_acked(),
        "events": events,
        "audit": audit,
    }


def triage(alert_id: int, user: Any, action: str, fields: dict[str, Any]) -> str:
    """Acknowledge / un-acknowledge / assign from a page; returns "" or the error to show."""
    from alerts import acks

    if not user.has_perm(acks.PERMISSION):
        return f"needs the {acks.PERMISSION} permission"
    alert = selectors.alert_by_id(alert_id)
    if alert is None:
        return f"no alert {alert_id}"
    try:
        if action == "ack":
            acks.acknowledge(alert, user, fields.get("comment") or "", fields.get("until"))
        elif action == "unack":
            acks.unacknowledge(alert, user)
        else:
            name = fields.get("assignee") or ""
            acks.assign(alert, user, acks.user_named(name) if name else None)
    except acks.AckError as exc:
        return str(exc)
    return ""
