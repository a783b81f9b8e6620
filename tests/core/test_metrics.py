"""/metrics: the app's own metrics, for allowed addresses or the metrics token, without a session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from pytest_django import Settings

from alerts.models import Evaluation
from core.models import WorkerHeartbeat
from core.tasks import record_worker_heartbeat
from tests.support.processes import CeleryWorker, wait_until

pytestmark = pytest.mark.django_db

HEARTBEAT_TASK = "core.tasks.record_worker_heartbeat"
HEARTBEAT_AT = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC)


def _sample(client: Client, name: str, **labels: str) -> float:
    """The value of one sample of /metrics (0 when absent)."""
    response = client.get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_metrics_from_an_allowed_address_counts_requests(client: Client) -> None:
    healthz = {"method": "GET", "route": "healthz", "status": "200"}
    before = _sample(client, "clusterwatch_http_requests_total", **healthz)

    client.get("/healthz")

    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "clusterwatch_http_requests_total{" in response.content.decode()
    assert _sample(client, "clusterwatch_http_requests_total", **healthz) == before + 1


def test_metrics_from_a_disallowed_address_is_403(client: Client) -> None:
    response = client.get("/metrics", REMOTE_ADDR="10.1.2.3")

    assert response.status_code == 403
    assert response.json() == {"error": "forbidden", "detail": "client not allowed to read metrics"}


def test_metrics_allowlist_accepts_networks(client: Client, settings: Settings) -> None:
    settings.METRICS_ALLOWED_IPS = ["10.0.0.0/8"]

    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_metrics_token_opens_metrics_from_any_address(client: Client, settings: Settings) -> None:
    settings.METRICS_TOKEN = "scrape-me"

    allowed = client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer scrape-me")
    wrong = client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer nope")

    assert allowed.status_code == 200
    assert b"clusterwatch_http_requests_total" in allowed.content
    assert wrong.status_code == 403


@pytest.mark.django_db(transaction=True)
def test_celery_task_outcomes_appear_in_metrics(
    client: Client, celery_worker: CeleryWorker
) -> None:
    outcome = {"task": HEARTBEAT_TASK, "outcome": "success"}
    before = _sample(client, "clusterwatch_celery_task_outcomes_total", **outcome)

    record_worker_heartbeat.delay(hostname="metrics-probe")

    wait_until(
        lambda: _sample(client, "clusterwatch_celery_task_outcomes_total", **outcome) == before + 1,
        timeout=20,
        what=f"the worker's success count of {HEARTBEAT_TASK} in /metrics",
    )


def _samples_named(client: Client, name: str) -> list[float]:
    response = client.get("/metrics")
    families = text_string_to_metric_families(response.content.decode())
    return [s.value for family in families for s in family.samples if s.name == name]


def test_metrics_export_the_newest_worker_heartbeat(client: Client) -> None:
    name = "clusterwatch_worker_heartbeat_timestamp_seconds"
    assert (
        _samples_named(client, name) == []
    )  # no heartbeat yet: no sample (the rule's absent case)

    WorkerHeartbeat.objects.create(hostname="worker-a", seen_at=HEARTBEAT_AT)
    WorkerHeartbeat.objects.create(hostname="worker-b", seen_at=HEARTBEAT_AT - timedelta(minutes=5))

    assert _samples_named(client, name) == [HEARTBEAT_AT.timestamp()]


def test_metrics_export_the_newest_rule_evaluation(client: Client) -> None:
    name = "clusterwatch_alerts_last_evaluation_timestamp_seconds"
    assert _samples_named(client, name) == []

    Evaluation.objects.create(started_at=HEARTBEAT_AT - timedelta(minutes=1))
    Evaluation.objects.create(started_at=HEARTBEAT_AT)

    assert _samples_named(client, name) == [HEARTBEAT_AT.timestamp()]
