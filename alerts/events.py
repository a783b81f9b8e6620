"""Typed live-update payloads the alerts app publishes (through ``core.live.publish``)."""

from __future__ import annotations

from typing import Literal, TypedDict


class AlertsChanged(TypedDict):
    """Alert state changed: the new counts, for badges and the alert list to refresh."""

    type: Literal["alerts.changed"]
    firing: int
    pending: int
    silenced: int
    inhibited: int
    changes: int
    evaluated_at: str


def alerts_changed(
    *, firing: int, pending: int, silenced: int, inhibited: int, changes: int, evaluated_at: str
) -> AlertsChanged:
    """Build the event (one place, so producer and consumers agree on its shape)."""
    return {
        "type": "alerts.changed",
        "firing": firing,
        "pending": pending,
        "silenced": silenced,
        "inhibited": inhibited,
        "changes": changes,
        "evaluated_at": evaluated_at,
    }
