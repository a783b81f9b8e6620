"""Ingest health: per-family records, the /readyz check and the /metrics collector."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db.models import F
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core.health import ComponentStatus
from core.secrets import redact_text

from .models import FamilyHealth, IngestCursor, IngestCycle
from .outcome import CycleOutcome


def record_cycle(cycle: IngestCycle, outcome: CycleOutcome) -> None:
    """Close the cycle row and fold its outcome into the family's health row."""
    now = datetime.now(UTC)
    cycle.finished_at, cycle.rows, cycle.skipped, cycle.error = (
        now,
        outcome.rows,
        outcome.skipped,
        redact_text(outcome.error),
    )
    cycle.skipped_reasons = outcome.unfit
    cycle.save(update_fields=["finished_at", "rows", "skipped", "skipped_reasons", "error"])
    health, _ = FamilyHealth.objects.get_or_create(family=outcome.family)
    cursor = IngestCursor.objects.filter(family=outcome.family).first()
    updates = {
        "last_attempt": now,
        "duration_seconds": outcome.duration,
        "rows": F("rows") + outcome.rows,
        "skipped": F("skipped") + outcome.skipped,
        "last_rows": outcome.rows,
        "skipped_reasons": outcome.unfit,
        "lag_seconds": (now - cursor.covered_until).total_seconds() if cursor else None,
    }
    if outcome.error:
        updates |= {"errors": F("errors") + 1, "last_error": redact_text(outcome.error)[:5000]}
    else:
        updates |= {"last_success": now, "last_error": ""}
    FamilyHealth.objects.filter(pk=health.pk).update(**updates)


def current_lags(now: datetime | None = None) -> dict[str, float]:
    """family → seconds between now and its cursor (only families that have run)."""
    now = now or datetime.now(UTC)
    return {c.family: (now - c.covered_until).total_seconds() for c in IngestCursor.objects.all()}


def check_ingest_lag() -> ComponentStatus:
    """/readyz: not ok when a family that has run lags more than INGEST_MAX_LAG_SECONDS."""
    try:
        lags = current_lags()
    except Exception as exc:  # noqa: BLE001 - reported, never raised, by a readiness probe
        return ComponentStatus("ingest", False, f"{type(exc).__name__}: {exc}")
    if not lags:
        return ComponentStatus("ingest", True, "no ingest yet")
    limit = settings.INGEST_MAX_LAG_SECONDS
    late = {family: round(lag) for family, lag in sorted(lags.items()) if lag > limit}
    detail = ", ".join(f"{f} {lag}s behind" for f, lag in late.items()) or "ok"
    extra = {"lag_seconds": {family: round(lag, 1) for family, lag in sorted(lags.items())}}
    return ComponentStatus("ingest", not late, detail, extra=extra)


class IngestCollector(Collector):
    """Exports ingest health per family from the database at scrape time."""

    def describe(self) -> list[Metric]:
        """Nothing up front: registering must not query the database."""
        return []

    def collect(self) -> Iterable[Metric]:
        lag = GaugeMetricFamily(
            "clusterwatch_ingest_lag_seconds",
            "Seconds the family's data is behind now.",
            labels=["family"],
        )
        rows = CounterMetricFamily(
            "clusterwatch_ingest_rows", "Rows written by ingest.", labels=["family"]
        )
        skipped = CounterMetricFamily(
            "clusterwatch_ingest_skipped",
            "Points skipped (NaN, Inf, bad labels).",
            labels=["family"],
        )
        errors = CounterMetricFamily(
            "clusterwatch_ingest_errors", "Failed ingest cycles.", labels=["family"]
        )
        success = GaugeMetricFamily(
            "clusterwatch_ingest_last_success_timestamp_seconds",
            "Unix time of the family's last successful cycle.",
            labels=["family"],
        )
        unfit = GaugeMetricFamily(
            "clusterwatch_ingest_skipped_series",
            "Series the family's last cycle skipped, by exporter job and reason (e.g. no known node).",
            labels=["family", "reason"],
        )
        try:
            lags = current_lags()
            health = list(FamilyHealth.objects.all())
        except Exception:  # noqa: BLE001 - a scrape must not fail because the database is down
            lags, health = {}, []
        for family, seconds in sorted(lags.items()):
            lag.add_metric([family], seconds)
        for row in sorted(health, key=lambda h: h.family):
            rows.add_metric([row.family], float(row.rows))
            skipped.add_metric([row.family], float(row.skipped))
            errors.add_metric([row.family], float(row.errors))
            if row.last_success:
                success.add_metric([row.family], row.last_success.timestamp())
            for reason, count in sorted((row.skipped_reasons or {}).items()):
                unfit.add_metric([row.family, reason], float(count))
        yield from (lag, rows, skipped, errors, success, unfit)
        yield from compaction_metrics()


def compaction_metrics(now: datetime | None = None) -> list[Metric]:
    """Compaction's cost and backlog per hot table (``ingest.compaction``), from its progress rows."""
    from django.db.models import Sum

    from .compaction import hours_pending
    from .models import Compaction

    rows = CounterMetricFamily(
        "clusterwatch_compaction_rows", "Hot sample rows compacted into history.", labels=["table"]
    )
    seconds = CounterMetricFamily(
        "clusterwatch_compaction_seconds", "Time spent compacting.", labels=["table"]
    )
    leftover = GaugeMetricFamily(
        "clusterwatch_compaction_leftover_rows",
        "Rows past the hot window left hot (off the step grid or out of an encoding's range).",
        labels=["table"],
    )
    pending = GaugeMetricFamily(
        "clusterwatch_compaction_pending_hours",
        "Hours past the hot window not compacted yet.",
        labels=["table"],
    )
    try:
        totals: list[dict[str, Any]] = list(
            Compaction.objects.values("table").annotate(
                rows=Sum("rows"), seconds=Sum("seconds"), leftover=Sum("leftover")
            )
        )
        backlog = hours_pending(now)
    except Exception:  # noqa: BLE001 - a scrape must not fail because the database is down
        totals, backlog = [], {}
    for total in sorted(totals, key=lambda t: t["table"]):
        rows.add_metric([total["table"]], float(total["rows"]))
        seconds.add_metric([total["table"]], float(total["seconds"]))
        leftover.add_metric([total["table"]], float(total["leftover"]))
    for table, hours in sorted(backlog.items()):
        pending.add_metric([table], float(hours))
    return [rows, seconds, leftover, pending]
