"""The Celery beat schedule, built from settings.

Each periodic task expires before its next run, so a stalled worker never
builds a backlog of stale cycles.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def _every(task: str, seconds: float, **options: Any) -> dict[str, Any]:
    return {"task": task, "schedule": seconds, "options": {"expires": seconds * 0.9, **options}}


def beat_schedule() -> dict[str, dict[str, Any]]:
    """All periodic tasks of the product."""
    interval = float(settings.INGEST_INTERVAL_SECONDS)
    return {
        "worker-heartbeat": _every("core.tasks.record_worker_heartbeat", 30.0),
        "ingest-cycle": _every("ingest.tasks.ingest_cycle", interval),
        "ingest-partitions": _every("ingest.tasks.maintain_partitions", 3600.0),
        "ingest-compaction": _every(
            "ingest.tasks.compact_history", float(settings.INGEST_COMPACTION_INTERVAL_SECONDS)
        ),
        "alerts-evaluate": _every(
            "alerts.tasks.evaluate_alerts", float(settings.ALERTS_EVALUATION_INTERVAL_SECONDS)
        ),
        "alerts-flush-notifications": _every(
            "alerts.notify.tasks.flush_notifications",
            float(settings.ALERTS_NOTIFY_INTERVAL_SECONDS),
        ),
    }
