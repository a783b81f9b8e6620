"""Operational tasks."""

from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from .models import WorkerHeartbeat


@shared_task(name="core.tasks.record_worker_heartbeat")
def record_worker_heartbeat(hostname: str | None = None) -> str:
    """Touch this worker's heartbeat row: proof that the broker delivers and the worker can write."""
    name = hostname or socket.gethostname()
    WorkerHeartbeat.objects.update_or_create(hostname=name, defaults={"seen_at": timezone.now()})
    return name
