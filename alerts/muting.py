"""Muting, applied to alert rows: inhibition and silences set ``inhibited`` / ``silenced`` (with history).

Muted alerts keep their lifecycle: they are recorded and shown, never notified.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from .inhibition import inhibitions
from .models import Alert, AlertEvent, EventKind, SilenceAudit
from .silences import active_silences, matches_all


def apply_muting(
    alerts: list[Alert],
    wall: datetime,
    events: list[AlertEvent],
    changed: dict[int, Alert],
    new: set[int],
) -> None:
    """Mark inhibited and silenced alerts (and record each change of either flag)."""
    muted = inhibitions(alerts)
    silences = active_silences(wall)
    for alert in alerts:
        source = muted.get(alert.pk)
        if (source is not None) != alert.inhibited or alert.inhibited_by_id != source:
            kind = EventKind.INHIBITED if source is not None else EventKind.UNINHIBITED
            alert.inhibited, alert.inhibited_by_id = source is not None, source
            events.append(AlertEvent(alert=alert, ts=wall, kind=kind, detail={"by_alert": source}))
            _touch(alert, wall, changed, new)
        silence = next((s for s, m in silences if matches_all(m, alert.labels)), None)
        silence_id = silence.pk if silence else None
        if (silence is not None) != alert.silenced or alert.silenced_by_id != silence_id:
            kind = EventKind.SILENCED if silence is not None else EventKind.UNSILENCED
            alert.silenced, alert.silenced_by_id = silence is not None, silence_id
            events.append(
                AlertEvent(alert=alert, ts=wall, kind=kind, detail={"silence": silence_id})
            )
            _touch(alert, wall, changed, new)


def _touch(alert: Alert, wall: datetime, changed: dict[int, Alert], new: set[int]) -> None:
    alert.updated_at = wall
    if alert.pk not in new:
        changed[alert.pk] = alert


def end_until_resolved_silences(active: Iterable[Alert], wall: datetime) -> None:
    """End the "until resolved" silences that no pending or firing alert matches any more."""
    for silence, matchers in active_silences(wall):
        if not silence.until_resolved or any(matches_all(matchers, a.labels) for a in active):
            continue
        silence.ends_at = wall
        silence.save(update_fields=["ends_at"])
        SilenceAudit.objects.create(
            silence=silence, silence_ref=silence.pk, action=SilenceAudit.Action.ENDED
        )
