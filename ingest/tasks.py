"""Celery tasks: thin wrappers over ``ingest.services`` (retries declared on the decorator)."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError

from . import partitions, services


@shared_task(
    name="ingest.tasks.ingest_cycle",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=3,
)
def ingest_cycle() -> dict[str, str]:
    """One cycle of every family up to now; returns family → status."""
    return {outcome.family: outcome.status for outcome in services.ingest_all()}


@shared_task(
    name="ingest.tasks.maintain_partitions",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
)
def maintain_partitions() -> list[str]:
    """Drop partitions past retention; returns the names dropped."""
    from django.db import transaction

    with transaction.atomic():
        return partitions.drop_expired()
