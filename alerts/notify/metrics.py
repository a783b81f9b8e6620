"""The notification metrics: failed attempts, given-up deliveries, the outbox backlog.

Failures happen in worker processes, so they are counted in Redis (one hash
each) and exported by whichever web process serves /metrics, like the Celery
task outcomes in ``core.metrics``; the backlog and the disabled channels are
read from Postgres at scrape time. Importing this module registers the collector.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import redis
from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from core.metrics import register_collector

log = logging.getLogger(__name__)

FAILURES_KEY = "clusterwatch:metrics:notification_failures"
FAILURES = "clusterwatch_notification_failures"
FAILURES_HELP = "Failed notification delivery attempts, by channel kind and HTTP status."
DISABLED = "clusterwatch_notification_channels_disabled"
DISABLED_HELP = "Notification channels disabled because their destination is gone."
GIVEN_UP_KEY = "clusterwatch:metrics:notifications_given_up"
GIVEN_UP = "clusterwatch_notification_given_up"
GIVEN_UP_HELP = "Notifications never delivered (gave_up, rejected, channel_gone), by channel kind."
BACKLOG = "clusterwatch_notification_outbox_backlog"
BACKLOG_HELP = "Outbox rows not delivered yet (pending or being sent)."
OLDEST = "clusterwatch_notification_outbox_oldest_seconds"
OLDEST_HELP = "Age of the oldest outbox row not delivered yet, seconds (0 when there is none)."


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _count(key: str, field: str) -> None:
    try:
        _redis().hincrby(key, field, 1)
    except redis.RedisError as exc:
        log.warning("could not count a notification failure: %s", exc)


def count_failure(kind: str, status_code: int | None) -> None:
    """Add one failed delivery attempt for (channel kind, HTTP status or ``error``)."""
    _count(FAILURES_KEY, f"{kind}|{status_code or 'error'}")


def count_given_up(kind: str, outcome: str) -> None:
    """Add one notification that will never be delivered, for (channel kind, final outcome)."""
    _count(GIVEN_UP_KEY, f"{kind}|{outcome}")


def _redis_counter(
    name: str, help_text: str, key: str, labels: list[str], zeros: Iterable[str] = ()
) -> Metric:
    """A counter of ``kind|detail`` fields of one Redis hash; ``zeros`` are exported as 0 until counted."""
    family = CounterMetricFamily(name, help_text, labels=labels)
    try:
        counts = {field.decode(): float(value) for field, value in _redis().hgetall(key).items()}
    except redis.RedisError:
        return family
    for field, value in sorted((dict.fromkeys(zeros, 0.0) | counts).items()):
        kind, _, detail = field.partition("|")
        family.add_metric([kind, detail], value)
    return family


def _given_up_fields() -> list[str]:
    """Every (channel kind, final outcome): a series from 0, so the first one shows in increase()."""
    from ..models import AttemptOutcome, ChannelKind

    final = (AttemptOutcome.GAVE_UP, AttemptOutcome.REJECTED, AttemptOutcome.CHANNEL_GONE)
    return [f"{kind}|{outcome.value}" for kind in ChannelKind.values for outcome in final]


class NotificationCollector(Collector):
    """Exports failed and given-up deliveries (Redis), disabled channels and the backlog (Postgres)."""

    def describe(self) -> Iterable[Metric]:
        """The metric names, without reading Redis or Postgres (called at registration)."""
        yield CounterMetricFamily(FAILURES, FAILURES_HELP, labels=["kind", "status"])
        yield CounterMetricFamily(GIVEN_UP, GIVEN_UP_HELP, labels=["kind", "outcome"])
        yield GaugeMetricFamily(DISABLED, DISABLED_HELP)
        yield GaugeMetricFamily(BACKLOG, BACKLOG_HELP)
        yield GaugeMetricFamily(OLDEST, OLDEST_HELP)

    def collect(self) -> Iterable[Metric]:
        yield _redis_counter(FAILURES, FAILURES_HELP, FAILURES_KEY, ["kind", "status"])
        yield _redis_counter(
            GIVEN_UP, GIVEN_UP_HELP, GIVEN_UP_KEY, ["kind", "outcome"], _given_up_fields()
        )
        yield self._disabled_channels()
        yield from self._backlog()

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

    def _backlog(self) -> Iterable[Metric]:
        from ..models import Outbox, OutboxStatus

        backlog, oldest = (
            GaugeMetricFamily(BACKLOG, BACKLOG_HELP),
            GaugeMetricFamily(OLDEST, OLDEST_HELP),
        )
        waiting = Outbox.objects.filter(status__in=[OutboxStatus.PENDING, OutboxStatus.SENDING])
        try:
            found = waiting.aggregate(rows=Count("id"), first=Min("created_at"))
        except DatabaseError as exc:
            log.warning("could not read the outbox backlog: %s", exc)
            return backlog, oldest
        age = (timezone.now() - found["first"]).total_seconds() if found["first"] else 0.0
        backlog.add_metric([], float(found["rows"]))
        oldest.add_metric([], max(0.0, age))
        return backlog, oldest


register_collector(NotificationCollector())
