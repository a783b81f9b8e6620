"""The notification-failures metric.

Failures happen in worker processes, so they are counted in Redis (one hash)
and exported by whichever web process serves /metrics, like the Celery task
outcomes in ``core.metrics``. Importing this module registers the collector.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis
from django.conf import settings
from django.db import DatabaseError
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core.metrics import register_collector

log = logging.getLogger(__name__)

FAILURES_KEY = "clusterwatch:metrics:notification_failures"
FAILURES = "clusterwatch_notification_failures"
FAILURES_HELP = "Failed notification delivery attempts, by channel kind and HTTP status."
DISABLED = "clusterwatch_notification_channels_disabled"
DISABLED_HELP = "Notification channels disabled because their destination is gone."


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def count_failure(kind: str, status_code: int | None) -> None:
    """Add one failed delivery attempt for (channel kind, HTTP status or ``error``)."""
    try:
        _redis().hincrby(FAILURES_KEY, f"{kind}|{status_code or 'error'}", 1)
    except redis.RedisError as exc:
        log.warning("could not count a notification failure: %s", exc)


class NotificationCollector(Collector):
    """Exports failed delivery attempts (Redis) and disabled channels (Postgres)."""

    def describe(self) -> Iterable[Metric]:
        """The metric names, without reading Redis or Postgres (called at registration)."""
        yield CounterMetricFamily(FAILURES, FAILURES_HELP, labels=["kind", "status"])
        yield GaugeMetricFamily(DISABLED, DISABLED_HELP)

    def collect(self) -> Iterable[Metric]:
        failures = CounterMetricFamily(FAILURES, FAILURES_HELP, labels=["kind", "status"])
        try:
            counts = _redis().hgetall(FAILURES_KEY)
        except redis.RedisError:
            counts = {}
        for key, value in sorted(counts.items()):
            kind, _, status = key.decode().partition("|")
            failures.add_metric([kind, status], float(value))
        yield failures
        yield self._disabled_channels()

    def _disabled_channels(self) -> Metric:
        from ..models import NotificationChannel

        gauge = GaugeMetricFamily(DISABLED, DISABLED_HELP)
        try:
            disabled = NotificationChannel.objects.filter(enabled=False).count()
        except DatabaseError as exc:
            log.warning("could not count disabled channels: %s", exc)
            return gauge
        gauge.add_metric([], float(disabled))
        return gauge


register_collector(NotificationCollector())
