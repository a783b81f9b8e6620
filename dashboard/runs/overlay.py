"""Alerts on a run's nodes over its life, for the timeline overlay.

Reads through ``alerts.selectors.alerts_on_nodes`` when the alerts app offers it; until then it
reads the ``Alert`` table directly (read-only), and with no alerts app at all it returns nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class AlertSpan:
    """An alert on one node from ``start`` to ``end`` (None: still open)."""

    rule: str
    node: str
    severity: str
    state: str
    start: datetime
    end: datetime | None
    summary: str


def _from_selectors(nodes: Sequence[str], start: datetime, end: datetime) -> list[AlertSpan] | None:
    if importlib.util.find_spec("alerts.selectors") is None:
        return None
    selectors = importlib.import_module("alerts.selectors")
    reader = getattr(selectors, "alerts_on_nodes", None)
    if reader is None:
        return None
    return [_span(row) for row in reader(list(nodes), start, end)]


def _get(row: Any, *names: str) -> Any:
    for name in names:
        value = row.get(name) if isinstance(row, dict) else getattr(row, name, None)
        if value is not None:
            return value
    return None


def _span(row: Any) -> AlertSpan:
    return AlertSpan(
        rule=str(_get(row, "rule", "name") or ""),
        node=str(_get(row, "node") or ""),
        severity=str(_get(row, "severity") or ""),
        state=str(_get(row, "state") or ""),
        start=_get(row, "pending_since", "since", "start"),
        end=_get(row, "resolved_at", "until", "end"),
        summary=str(_get(row, "summary") or ""),
    )


def _from_table(nodes: Sequence[str], start: datetime, end: datetime) -> list[AlertSpan]:
    try:
        from alerts.models import Alert, AlertState
    except ImportError:
        return []
    rows = (
        Alert.objects.filter(node__in=list(nodes), pending_since__lte=end)
        .exclude(resolved_at__lt=start)
        .exclude(state=AlertState.INACTIVE)  # a pending blip that never fired is not an alert bar
        .order_by("pending_since")[:500]
    )
    return [_span(row) for row in rows]


def alerts_on_nodes(nodes: Sequence[str], start: datetime, end: datetime) -> list[AlertSpan]:
    """Alerts on any of ``nodes`` overlapping ``[start, end]``, oldest first."""
    if not nodes:
        return []
    spans = _from_selectors(nodes, start, end)
    return spans if spans is not None else _from_table(nodes, start, end)
