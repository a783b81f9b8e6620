"""The rules engine's metric: when all rules were last evaluated."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import DatabaseError
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

LAST_EVALUATION = "clusterwatch_alerts_last_evaluation_timestamp_seconds"
LAST_EVALUATION_HELP = "Unix time of the newest evaluation of all rules (its started_at)."


class EvaluationCollector(Collector):
    """Exports the newest Evaluation row's time (read from Postgres at scrape time)."""

    def describe(self) -> Iterable[Metric]:
        """The metric name, without reading Postgres (called at registration)."""
        yield GaugeMetricFamily(LAST_EVALUATION, LAST_EVALUATION_HELP)

    def collect(self) -> Iterable[Metric]:
        from .models import Evaluation

        gauge = GaugeMetricFamily(LAST_EVALUATION, LAST_EVALUATION_HELP)
        # Evaluations hold one lock at a time: the highest id is the newest (the primary key index).
        newest = Evaluation.objects.order_by("-pk").values_list("started_at", flat=True)
        try:
            found = newest.first()
        except DatabaseError as exc:
            log.warning("could not read the last evaluation: %s", exc)
            found = None
        if found is not None:
            gauge.add_metric([], found.timestamp())
        yield gauge
