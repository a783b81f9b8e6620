"""Delivery: retries, backoff, Retry-After, timeouts, dead channels, lost workers, Alertmanager."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from alerts.models import AttemptOutcome, DeliveryAttempt, NotificationChannel, Outbox
from alerts.notify import outbox
from tests.alerts.notify_helpers import (
    STARTED,
    flush_at,
    make_alert,
    make_channel,
    resolve,
    send_all,
)
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.receivers import (
    GONE,
    OK,
    SERVER_ERROR,
    rate_limited,
    run_alertmanager,
    slow,
    start_receiver,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]


@pytest.fixture(autouse=True)
def _fast_retries(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_BACKOFF_SECONDS = 0.05  # type: ignore[attr-defined]
    settings.ALERTS_NOTIFY_BACKOFF_MAX_SECONDS = 0.2  # type: ignore[attr-defined]
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]


def attempts() -> list[tuple[int, str, int | None, str]]:
    rows = DeliveryAttempt.objects.order_by("number")
    return [(a.number, a.outcome, a.status_code, a.error) for a in rows]


def test_a_500_then_a_200_is_exactly_one_delivery_after_two_attempts() -> None:
    make_alert("gpu-001")
    with start_receiver(SERVER_ERROR, OK) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
        send_all()
        for row in Outbox.objects.all():
            assert outbox.deliver(row.id).outcome == "not claimed"
    assert len(receiver.requests) == 2
    assert receiver.requests[0].body == receiver.requests[1].body
    assert attempts() == [
        (1, AttemptOutcome.RETRY, 500, "HTTP 500: internal error"),
        (2, AttemptOutcome.DELIVERED, 200, ""),
    ]
    row = Outbox.objects.get()
    assert (row.status, row.attempts, row.last_error) == ("delivered", 2, "")


def test_a_429_retry_after_is_waited_out() -> None:
    make_alert("gpu-001")
    with start_receiver(rate_limited(2), OK) as receiver:
        make_channel("slack", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    first, second = receiver.requests
    assert second.received_at - first.received_at >= 2.0
    assert attempts() == [
        (1, AttemptOutcome.RETRY, 429, "HTTP 429: rate_limited"),
        (2, AttemptOutcome.DELIVERED, 200, ""),
    ]


def test_a_timeout_is_retried(settings: pytest.FixtureRequest) -> None:
    settings.HTTP_TIMEOUT_SECONDS = 0.3  # type: ignore[attr-defined]
    make_alert("gpu-001")
    with start_receiver(slow(1.0), OK) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    assert len(receiver.requests) == 2
    assert attempts() == [
        (1, AttemptOutcome.RETRY, None, "timed out after 0.3 s (whole request)"),
        (2, AttemptOutcome.DELIVERED, 200, ""),
    ]


def test_attempts_stop_at_the_limit(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_MAX_ATTEMPTS = 3  # type: ignore[attr-defined]
    make_alert("gpu-001")
    with start_receiver(SERVER_ERROR) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    assert len(receiver.requests) == 3
    assert [a[1] for a in attempts()] == ["retry", "retry", "gave_up"]
    assert Outbox.objects.get().status == "failed"


def test_a_404_disables_the_channel_with_a_visible_reason(
    client: Client, staff_user: object
) -> None:
    make_alert("gpu-001")
    make_alert("gpu-002")
    with start_receiver(GONE) as receiver:
        channel = make_channel("slack", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        assert len(flush_at(30)) == 2
        send_all()
        assert flush_at(3600) == []
    assert len(receiver.requests) == 1
    channel.refresh_from_db()
    assert not channel.enabled
    assert channel.disabled_reason.startswith("HTTP 404: no_service (at ")
    assert channel.disabled_reason.endswith("the destination is gone; fix the URL and re-enable.")
    assert sorted(Outbox.objects.values_list("status", flat=True)) == ["failed", "failed"]
    assert [a[1] for a in attempts()] == [AttemptOutcome.CHANNEL_GONE]
    client.force_login(staff_user)
    page = client.get("/admin/alerts/notificationchannel/").content.decode()
    assert "HTTP 404: no_service" in page


def test_a_lost_worker_s_row_is_sent_exactly_once_after_its_lease_expires() -> None:
    make_alert("gpu-001")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        (row_id,) = flush_at(30)
        abandoned = outbox.claim(row_id)  # a worker takes the row, then dies
        assert abandoned is not None
        assert outbox.due_ids() == [] and outbox.deliver(row_id).outcome == "not claimed"
        Outbox.objects.filter(id=row_id).update(lease_expires_at=timezone.now())
        assert outbox.deliver(row_id).outcome == AttemptOutcome.DELIVERED
        outbox._finish(abandoned, "pending", AttemptOutcome.RETRY, retry_in=0)  # it wakes up late
        send_all()
        assert outbox.deliver(row_id).outcome == "not claimed"
    assert len(receiver.requests) == 1
    assert Outbox.objects.get().status == "delivered"
    assert [a[1] for a in attempts()] == [AttemptOutcome.ABANDONED, AttemptOutcome.DELIVERED]
    assert DeliveryAttempt.objects.get(number=1).error == "the sender's lease expired"


def test_send_test_notification_from_the_admin(client: Client, staff_user: object) -> None:
    with start_receiver() as receiver:
        channel = make_channel("webhook", receiver.url)
        client.force_login(staff_user)
        response = client.post(
            "/admin/alerts/notificationchannel/",
            {"action": "send_test_notification", "_selected_action": [channel.id]},
            follow=True,
        )
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        "webhook-ops: test notification delivered (HTTP 200); the receiver answered: ok"
    ]
    (request,) = receiver.requests
    body = request.json()
    assert body["alerts"][0]["labels"]["alertname"] == "clusterwatch_test"
    assert body["alerts"][0]["annotations"]["summary"] == (
        "Test notification from ClusterWatch, requested by root."
    )


def test_the_admin_never_shows_the_secret(client: Client, staff_user: object) -> None:
    channel = make_channel("webhook", "http://127.0.0.1:1/", secret="supersecretvalue-9876")
    client.force_login(staff_user)
    page = client.get(f"/admin/alerts/notificationchannel/{channel.id}/change/").content.decode()
    assert "supersecretvalue" not in page
    assert "set, ending …9876" in page


def test_alertmanager_receives_forwarded_alerts_and_their_resolution(tmp_path: Path) -> None:
    alert = make_alert("gpu-001", leaf_switch="leaf-07", device="mlx5_0", port="1")
    with run_alertmanager(tmp_path) as alertmanager:
        make_channel("alertmanager", alertmanager.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
        (received,) = alertmanager.alerts()
        assert received["labels"] == {
            "alertname": "ib_port_errors",
            "severity": "critical",
            "node": "gpu-001",
            "leaf_switch": "leaf-07",
            "device": "mlx5_0",
            "port": "1",
        }
        assert received["annotations"]["summary"] == "gpu-001: 130 symbol errors/hour"
        assert received["startsAt"].startswith(STARTED.strftime("%Y-%m-%dT%H:%M:%S"))
        assert received["status"]["state"] == "active"
        resolve(alert, timezone.now())
        flush_at(30 + 300)
        send_all()
        deadline = time.monotonic() + 5
        while alertmanager.alerts() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alertmanager.alerts() == []
    assert Outbox.objects.filter(status="delivered").count() == 2
    assert NotificationChannel.objects.get().enabled


def test_failures_are_counted_for_the_metrics_endpoint() -> None:
    from alerts.notify.metrics import FAILURES_KEY, NotificationCollector, _redis

    _redis().delete(FAILURES_KEY)
    make_alert("gpu-001")
    with start_receiver(SERVER_ERROR, rate_limited(0), OK) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)
        flush_at(30)
        send_all()
    samples = {
        (s.name, s.labels.get("status", "")): s.value
        for family in NotificationCollector().collect()
        for s in family.samples
    }
    assert samples[("clusterwatch_notification_failures_total", "500")] == 1.0
    assert samples[("clusterwatch_notification_failures_total", "429")] == 1.0
    assert samples[("clusterwatch_notification_channels_disabled", "")] == 0.0


def _notification_samples() -> dict[tuple[str, ...], float]:
    from alerts.notify.metrics import NotificationCollector

    return {
        (s.name, *s.labels.values()): s.value
        for family in NotificationCollector().collect()
        for s in family.samples
    }


def test_given_up_deliveries_and_the_outbox_backlog_are_exported(
    settings: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    from alerts.notify.metrics import GIVEN_UP_KEY, _redis

    _redis().delete(GIVEN_UP_KEY)
    settings.ALERTS_NOTIFY_MAX_ATTEMPTS = 2  # type: ignore[attr-defined]
    make_alert("gpu-001")
    with start_receiver(SERVER_ERROR, SERVER_ERROR) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)
        flush_at(30)
        Outbox.objects.update(created_at=STARTED)
        with monkeypatch.context() as clock:
            clock.setattr(timezone, "now", lambda: STARTED + timedelta(seconds=300))
            waiting = _notification_samples()
        send_all()
    samples = _notification_samples()

    backlog = ("clusterwatch_notification_outbox_backlog",)
    oldest = ("clusterwatch_notification_outbox_oldest_seconds",)
    assert (waiting[backlog], waiting[oldest]) == (1.0, 300.0)
    assert (samples[backlog], samples[oldest]) == (0.0, 0.0)
    given_up = {
        k[1:]: v for k, v in samples.items() if k[0] == "clusterwatch_notification_given_up_total"
    }
    assert len(given_up) == 15  # every channel kind x (gave_up, rejected, channel_gone), from 0
    assert {k: v for k, v in given_up.items() if v} == {("webhook", "gave_up"): 1.0}
    assert [a[:3] for a in attempts()] == [
        (1, AttemptOutcome.RETRY, 500),
        (2, AttemptOutcome.GAVE_UP, 500),
    ]
