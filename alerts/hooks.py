"""Entry points other apps call through settings (``INGEST_AFTER_COMMIT_HOOKS``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.cache import cache


def on_ingest_committed(event: Mapping[str, Any]) -> bool:
    """Queue one evaluation after a committed ingest cycle (an ``IngestCommitted`` event).

    Bursts coalesce: while an evaluation is queued and not yet started, further
    events queue nothing. Returns whether a task was queued.
    """
    from .tasks import QUEUED_KEY, evaluate_alerts

    if not settings.ALERTS_EVALUATE_ON_INGEST or event.get("type") != "ingest.committed":
        return False
    timeout = max(5, settings.ALERTS_EVALUATION_INTERVAL_SECONDS)
    if not cache.add(QUEUED_KEY, event.get("covered_until", ""), timeout=timeout):
        return False
    evaluate_alerts.apply_async(kwargs={"trigger": "ingest"}, expires=timeout)
    return True
