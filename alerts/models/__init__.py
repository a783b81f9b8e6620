"""The alerts app's models: alert state and silences (``core``) and notification delivery.

``core`` is owned by the rules engine; ``notifications`` by the notification
delivery work. Both are re-exported here so Django finds every model.
"""

from __future__ import annotations

from ..states import ACTIVE_STATES, AlertState, EventKind
from .core import (
    Alert,
    AlertEvent,
    Evaluation,
    RuleConfig,
    Severity,
    Silence,
    SilenceableNode,
    SilenceAudit,
)
from .maintenance import NodeMaintenance
from .notifications import (
    AttemptOutcome,
    ChannelKind,
    DeliveryAttempt,
    NotificationChannel,
    NotificationGroup,
    Outbox,
    OutboxStatus,
    SilenceMirror,
)
from .triage import AlertAudit, AlertTriage, NamespaceTeam, OverrideScope, RuleOverride

__all__ = [
    "ACTIVE_STATES",
    "Alert",
    "AlertAudit",
    "AlertEvent",
    "AlertState",
    "AlertTriage",
    "AttemptOutcome",
    "ChannelKind",
    "DeliveryAttempt",
    "Evaluation",
    "EventKind",
    "NamespaceTeam",
    "NodeMaintenance",
    "NotificationChannel",
    "NotificationGroup",
    "Outbox",
    "OutboxStatus",
    "OverrideScope",
    "RuleConfig",
    "RuleOverride",
    "Severity",
    "Silence",
    "SilenceAudit",
    "SilenceMirror",
    "SilenceableNode",
]
