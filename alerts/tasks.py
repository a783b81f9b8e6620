"""Celery tasks of the rules engine (thin: one call into ``alerts.services``)."""

from __future__ import annotations

from celery import shared_task
from django.core.cache import cache
from django.db import OperationalError

from . import services, watchdog

QUEUED_KEY = "alerts:evaluation-queued"


@shared_task(
    name="alerts.tasks.evaluate_alerts",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=3,
)
def evaluate_alerts(trigger: str = "schedule") -> dict[str, int]:
    """Evaluate every rule once; returns the counts."""
    cache.delete(QUEUED_KEY)  # a hook firing from now on queues a fresh evaluation
    result = services.evaluate(trigger=trigger)
    watchdog.ping_heartbeat()  # only after a successful evaluation: a failed one raised above
    return {"changes": result.changes, "firing": result.firing, "pending": result.pending}
