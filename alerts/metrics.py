"""The rules engine's metric: when all rules were last evaluated."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core.metrics import timestamp_gauge

LAST_EVALUATION = "clusterwatch_alerts_last_evaluation_timestamp_seconds"
LAST_EVALUATION_HELP = "Unix time of the newest evaluation of all rules (its started_at)."


class EvaluationCollector(Collector):
    """Exports the newest Evaluation row's time (read from Postgres at scrape time)."""

    def describe(self) -> Iterable[Metric]:
        """The metric name, without reading Postgres (called at registration)."""
        yield GaugeMetricFamily(LAST_EVALUATION, LAST_EVALUATION_HELP)

    def collect(self) -> Iterable[Metric]:
        from .models import Evaluation

        def newest() -> datetime | None:
            # Evaluations take one lock at a time: the highest id is the newest (primary key index).
            return Evaluation.objects.order_by("-pk").values_list("started_at", flat=True).first()

        yield timestamp_gauge(LAST_EVALUATION, LAST_EVALUATION_HELP, newest)
