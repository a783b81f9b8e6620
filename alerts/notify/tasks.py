"""Celery tasks: thin wrappers around the notify services.

``flush_notifications`` runs every ``ALERTS_NOTIFY_INTERVAL_SECONDS`` (beat):
it writes outbox rows for groups that are due, queues them, and re-queues rows
whose message was lost (overdue) or whose sender died (expired lease).
``deliver_notification`` sends one row once and schedules its retry.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import transaction

from . import outbox, services


@shared_task(ignore_result=True)
def flush_notifications() -> int:
    """Write due notifications to the outbox and queue everything ready to send."""
    written = services.flush()
    outbox.purge()
    # Rows that wait for their own countdown are left to it; only stragglers are swept.
    grace = 2 * float(settings.ALERTS_NOTIFY_INTERVAL_SECONDS)
    queued = set(written) | set(outbox.due_ids(grace=grace))
    for outbox_id in sorted(queued):
        transaction.on_commit(lambda i=outbox_id: deliver_notification.delay(i))
    return len(written)


@shared_task(ignore_result=True, acks_late=True)
def deliver_notification(outbox_id: int) -> str:
    """Send one outbox row once; queue the next try when it has to wait."""
    result = outbox.deliver(outbox_id)
    if result.retry_in is not None:
        deliver_notification.apply_async((outbox_id,), countdown=result.retry_in)
    return str(result.outcome)
