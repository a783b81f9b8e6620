"""The app's own Prometheus metrics.

Request metrics live in the web process registry. Celery task outcomes happen
in worker processes, so they are counted in Redis (one hash) and exported from
there by whichever web process serves /metrics.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import redis
from celery.signals import task_failure, task_retry, task_success
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry(auto_describe=True)
REQUESTS = Counter(
    "clusterwatch_http_requests_total",
    "HTTP requests served, by route and status code.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "clusterwatch_http_request_duration_seconds",
    "HTTP request latency by route.",
    ["method", "route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)
TASK_OUTCOMES_KEY = "clusterwatch:metrics:celery_task_outcomes"


def _route(request: HttpRequest) -> str:
    try:
        return resolve(request.path_info).route or "unmatched"
    except Resolver404:
        return "unmatched"


class RequestMetricsMiddleware:
    """Counts requests and observes latency, labelled by URL route (bounded cardinality)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        route = _route(request)
        LATENCY.labels(request.method, route).observe(time.perf_counter() - started)
        REQUESTS.labels(request.method, route, str(response.status_code)).inc()
        return response


def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def count_task_outcome(task_name: str, outcome: str) -> None:
    """Add one to the Redis-held counter for (task, outcome); never fails the task."""
    try:
        _redis().hincrby(TASK_OUTCOMES_KEY, f"{task_name}|{outcome}", 1)
    except redis.RedisError as exc:
        log.warning("could not count task outcome %s %s: %s", task_name, outcome, exc)


def _task_name(sender: Any) -> str:
    return getattr(sender, "name", None) or str(sender)


@task_success.connect
def _on_success(sender: Any = None, **_: Any) -> None:
    count_task_outcome(_task_name(sender), "success")


@task_failure.connect
def _on_failure(sender: Any = None, **_: Any) -> None:
    count_task_outcome(_task_name(sender), "failure")


@task_retry.connect
def _on_retry(sender: Any = None, **_: Any) -> None:
    count_task_outcome(_task_name(sender), "retry")


class TaskOutcomeCollector(Collector):
    """Exports the Redis-held Celery task outcome counters."""

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(
            "clusterwatch_celery_task_outcomes", "Celery task outcomes.", labels=["task", "outcome"]
        )
        try:
            counts = _redis().hgetall(TASK_OUTCOMES_KEY)
        except redis.RedisError:
            counts = {}
        for key, value in sorted(counts.items()):
            task, _, outcome = key.decode().partition("|")
            family.add_metric([task, outcome], float(value))
        yield family


REGISTRY.register(TaskOutcomeCollector())
HEARTBEAT = "clusterwatch_worker_heartbeat_timestamp_seconds"
HEARTBEAT_HELP = (
    "Unix time of the newest worker heartbeat (beat sends it, a `celery` queue worker writes it)."
)


def timestamp_gauge(name: str, help_text: str, newest: Callable[[], datetime | None]) -> Metric:
    """A gauge of the Unix time ``newest()`` reads at scrape time (no sample: none, or no database)."""
    gauge = GaugeMetricFamily(name, help_text)
    try:
        moment = newest()
    except DatabaseError as exc:  # a scrape must not fail because the database is down
        log.warning("could not read %s: %s", name, exc)
        return gauge
    if moment is not None:
        gauge.add_metric([], moment.timestamp())
    return gauge


class HeartbeatCollector(Collector):
    """Exports the newest WorkerHeartbeat: stale when beat or the `celery` queue's worker is gone."""

    def describe(self) -> Iterable[Metric]:
        """The metric name, without reading Postgres (called at registration)."""
        yield GaugeMetricFamily(HEARTBEAT, HEARTBEAT_HELP)

    def collect(self) -> Iterable[Metric]:
        from django.db.models import Max

        from .models import WorkerHeartbeat

        def newest() -> datetime | None:
            return WorkerHeartbeat.objects.aggregate(newest=Max("seen_at"))["newest"]

        yield timestamp_gauge(HEARTBEAT, HEARTBEAT_HELP, newest)


REGISTRY.register(HeartbeatCollector())


def register_collector(collector: Collector) -> None:
    """Later apps add their own metrics (ingest lag, alerts firing) through this."""
    REGISTRY.register(collector)
