"""The alerts app's models: alert state and silences (``core``) and notification delivery.

``core`` is owned by the rules engine; ``notifications`` by the notification
delivery work. Both are re-exported here so Django finds every model.
"""

from __future__ import annotations

from .core import (
    ACTIVE_STATES,
    Alert,
    AlertEvent,
    AlertState,
    Evaluation,
    EventKind,
    RuleConfig,
    Severity,
    Silence,
    SilenceableNode,
    SilenceAudit,
)
from .triage import AlertAudit, AlertTriage, NamespaceTeam, OverrideScope, RuleOverride

try:
    from .notifications import *  # noqa: F403 - the notify models, whatever they are
except ModuleNotFoundError as exc:  # pragma: no cover - only before notifications.py exists
    if exc.name != f"{__name__}.notifications":
        raise

__all__ = [
    "ACTIVE_STATES",
    "Alert",
    "AlertAudit",
    "AlertEvent",
    "AlertState",
    "Evaluation",
    "EventKind",
    "NamespaceTeam",
    "OverrideScope",
    "RuleConfig",
    "RuleOverride",
    "Severity",
    "Silence",
    "SilenceableNode",
    "SilenceAudit",
    "AlertTriage",
]
