"""Typed payloads ingest publishes after a committed cycle (live dashboard, alert evaluator)."""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from django.conf import settings
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)


class IngestCommitted(TypedDict):
    """New data is in: ``families`` are covered up to ``covered_until`` (ISO 8601, UTC)."""

    type: Literal["ingest.committed"]
    families: list[str]
    covered_until: str
    rows: int


def ingest_committed(families: list[str], covered_until: str, rows: int) -> IngestCommitted:
    """Build the event (one place, so producer and consumers agree on its shape)."""
    return {
        "type": "ingest.committed",
        "families": families,
        "covered_until": covered_until,
        "rows": rows,
    }


def publish_committed(event: IngestCommitted) -> None:
    """Send the event to browsers (core.live) and to every INGEST_AFTER_COMMIT_HOOKS callable.

    Called from ``transaction.on_commit``; a failing hook is logged and never
    affects ingest or the other hooks.
    """
    from core.live import publish

    publish(event)
    for path in settings.INGEST_AFTER_COMMIT_HOOKS:
        try:
            import_string(path)(event)
        except Exception:  # noqa: BLE001 - a hook's failure must not break ingest
            log.exception("ingest after-commit hook %s failed", path)
