"""Alerts on a run's nodes over its life, for the timeline overlay (read via ``alerts.selectors``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from alerts import selectors


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


def alerts_on_nodes(nodes: Sequence[str], start: datetime, end: datetime) -> list[AlertSpan]:
    """Alerts on any of ``nodes`` overlapping ``[start, end]``, oldest first (never inactive ones)."""
    if not nodes:
        return []
    return [
        AlertSpan(alert.rule, alert.node, alert.severity, alert.state, alert.pending_since,
                  alert.resolved_at, alert.summary)
        for alert in selectors.alerts_for_run(nodes, start, end)
    ]  # fmt: skip
