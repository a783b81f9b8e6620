"""Celery tasks: thin wrappers over ``ingest.services`` / ``ingest.shards`` (retries on the decorator).

Every task here is routed to the ``ingest`` queue (CELERY_TASK_ROUTES), but compaction,
which runs on ``celery`` so it never delays a cycle.
"""

from __future__ import annotations

from datetime import datetime

from celery import group, shared_task
from django.conf import settings
from django.db import OperationalError

from . import compaction, partitions, services, shards


@shared_task(
    name="ingest.tasks.ingest_cycle",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=3,
)
def ingest_cycle(until: str | None = None, families: list[str] | None = None) -> dict[str, str]:
    """One cycle of every family (or ``families``) up to ``until`` (ISO; default now); family → status.

    With INGEST_SHARDS > 1 the node-level families fan out as ``ingest_shard`` tasks.
    """
    end = datetime.fromisoformat(until) if until else None
    if settings.INGEST_SHARDS <= 1:
        outcomes = services.ingest_all(until=end, families=families)
        return {outcome.family: outcome.status for outcome in outcomes}
    return shards.run_cycle(_send_shards, until=end, families=families)


def _send_shards(orders: list[shards.ShardOrder]) -> None:
    # Expire with the cycle interval: a backlog of stale shards would only re-plan windows
    # the next cycle's orders cover anyway (each shard starts from its own cursor).
    expires = float(settings.INGEST_INTERVAL_SECONDS) * 4
    group(ingest_shard.s(order) for order in orders).apply_async(expires=expires)


@shared_task(
    name="ingest.tasks.ingest_shard",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=3,
)
def ingest_shard(order: shards.ShardOrder) -> str:
    """One shard of one family's cycle; returns its status."""
    return shards.ingest_shard(order).status


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


@shared_task(
    name="ingest.tasks.compact_history",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=3,
)
def compact_history() -> dict[str, int]:
    """Compact hot sample hours past the hot window (INGEST_COMPACTION_BUDGET_SECONDS per run).

    Each hour commits on its own: a soft time limit or a killed worker loses at most the
    hour in progress, which the next run redoes.
    """
    report = compaction.compact()
    return {"hours": report.hours, "rows": report.rows, "pending_hours": report.pending_hours}
