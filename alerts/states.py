"""An alert's states and the events of its history: the vocabulary of the lifecycle.

Plain choices with no model, so the pure lifecycle (``alerts.lifecycle``) and the models
(``alerts.models``, which re-export them) share one definition.
"""

from __future__ import annotations

from django.db import models


class AlertState(models.TextChoices):
    """Alert lifecycle (Prometheus semantics).

    ``pending``: the condition holds but not yet for the rule's ``for``.
    ``firing``: it held for ``for`` (and is kept for ``keep_firing_for`` after it stops).
    ``resolved``: it fired and has ended. ``inactive``: it was pending and stopped
    before ``for`` elapsed: it never fired and is never notified.
    """

    PENDING = "pending", "Pending"
    FIRING = "firing", "Firing"
    RESOLVED = "resolved", "Resolved"
    INACTIVE = "inactive", "Inactive (never fired)"


ACTIVE_STATES = (AlertState.PENDING, AlertState.FIRING)


class EventKind(models.TextChoices):
    """What an ``AlertEvent`` records."""

    PENDING = "pending", "Became pending"
    FIRING = "firing", "Started firing"
    RESOLVED = "resolved", "Resolved"
    INACTIVE = "inactive", "Stopped before firing"
    SILENCED = "silenced", "Silenced"
    UNSILENCED = "unsilenced", "Silence ended"
    INHIBITED = "inhibited", "Inhibited"
    UNINHIBITED = "uninhibited", "Inhibition ended"
