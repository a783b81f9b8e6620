"""Fault-injecting receivers: exact request counts, one delivery, one delivery id across retries."""

from __future__ import annotations

import email.utils
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import AttemptOutcome, DeliveryAttempt, NotificationChannel, Outbox
from alerts.notify import outbox
from alerts.transports.webhook import DELIVERY_HEADER, SIGNATURE_HEADER, verify
from tests.alerts.notify_helpers import SECRET, flush_at, make_alert, make_channel, send_all
from tests.alerts.validators import (
    valid_webhook,
    validated_payloads,  # noqa: F401 - the fixture
)
from tests.support.receivers import (
    GONE,
    OK,
    SERVER_ERROR,
    Receiver,
    Reply,
    rate_limited,
    rate_limited_until,
    redirect,
    slow,
    start_receiver,
    trickle,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]
DEADLINE = 1.0


@pytest.fixture(autouse=True)
def _fast_retries(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_BACKOFF_SECONDS = 0.05  # type: ignore[attr-defined]
    settings.ALERTS_NOTIFY_BACKOFF_MAX_SECONDS = 0.2  # type: ignore[attr-defined]
    settings.HTTP_TIMEOUT_SECONDS = DEADLINE  # type: ignore[attr-defined]
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]


def notify_once(url: str) -> Outbox:
    """One alert, one webhook channel, one notification, delivered until its row is final."""
    make_alert("gpu-001")
    make_channel("webhook", url)
    flush_at(0)  # the group appears; group_wait starts
    (row_id,) = flush_at(30)
    send_all(timeout=30)
    return Outbox.objects.get(id=row_id)


def checked(receiver: Receiver) -> list[str]:
    """Every request: a valid signed webhook body; their delivery ids."""
    for request in receiver.requests:
        valid_webhook(request.json())
        assert verify(request.headers[SIGNATURE_HEADER], request.body, SECRET)
    return [request.headers[DELIVERY_HEADER] for request in receiver.requests]


def outcomes() -> list[tuple[str, int | None]]:
    return [(a.outcome, a.status_code) for a in DeliveryAttempt.objects.order_by("number")]


def in_two_seconds() -> Reply:
    return rate_limited_until(email.utils.format_datetime(timezone.now() + timedelta(seconds=2)))


@pytest.mark.parametrize(
    ("first", "status", "error"),
    [
        (SERVER_ERROR, 500, "HTTP 500: internal error"),
        (rate_limited(1), 429, "HTTP 429: rate_limited"),
        (None, 429, "HTTP 429: rate_limited"),  # Retry-After as an HTTP date
        (slow(30), None, "timed out after 1 s (whole request)"),  # a hang
        (trickle(1.0), None, "timed out after 1 s (whole request)"),  # 1 byte/s, 40 s long
    ],
    ids=["500", "429-seconds", "429-date", "hang", "trickle"],
)
def test_a_temporary_fault_then_a_200_is_one_delivery_with_one_delivery_id(
    first: Reply | None, status: int | None, error: str
) -> None:
    with start_receiver(first or in_two_seconds(), OK) as receiver:
        row = notify_once(receiver.url)
    ids = checked(receiver)
    assert len(receiver.requests) == 2
    assert ids == [outbox.delivery_id(row)] * 2
    assert receiver.requests[0].body == receiver.requests[1].body
    assert (row.status, row.attempts) == ("delivered", 2)
    assert outcomes() == [(AttemptOutcome.RETRY, status), (AttemptOutcome.DELIVERED, 200)]
    failed = DeliveryAttempt.objects.get(number=1)
    assert failed.error == error
    if status == 429:
        assert receiver.requests[1].received_at - receiver.requests[0].received_at >= 1.0
    if status is None:  # the deadline holds for the whole request, not per read
        assert (failed.finished_at - failed.started_at).total_seconds() < DEADLINE + 1.0


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            redirect(301, "https://elsewhere.example/hook"),
            "HTTP 301: redirects to https://elsewhere.example/hook; redirects are not followed",
        ),
        (GONE, "HTTP 404: no_service"),
        (Reply(410, body="channel_is_archived"), "HTTP 410: channel_is_archived"),
    ],
    ids=["301", "404", "410"],
)
def test_a_permanent_answer_disables_the_channel_after_one_request(
    reply: Reply, reason: str
) -> None:
    with start_receiver(reply, OK) as receiver:
        row = notify_once(receiver.url)
        assert flush_at(3600) == []
    checked(receiver)
    assert len(receiver.requests) == 1
    assert (row.status, row.attempts, row.last_error) == ("failed", 1, reason)
    assert outcomes() == [(AttemptOutcome.CHANNEL_GONE, reply.status)]
    channel = NotificationChannel.objects.get()
    assert not channel.enabled
    assert channel.disabled_reason.startswith(reason + " (at ")
    hint = "redirects elsewhere" if reply.status == 301 else "the destination is gone"
    assert hint in channel.disabled_reason


def test_connection_refused_is_retried_until_the_attempts_run_out(
    settings: pytest.FixtureRequest,
) -> None:
    settings.ALERTS_NOTIFY_MAX_ATTEMPTS = 3  # type: ignore[attr-defined]
    with start_receiver() as receiver:
        url = receiver.url  # closed when the block ends: nothing listens there
    started = time.monotonic()
    row = notify_once(url)
    assert time.monotonic() - started < 10
    assert receiver.requests == []
    assert (row.status, row.attempts) == ("failed", 3)
    refused = "connection failed: ConnectionRefusedError"
    assert [(a.outcome, a.error) for a in DeliveryAttempt.objects.order_by("number")] == [
        (AttemptOutcome.RETRY, refused),
        (AttemptOutcome.RETRY, refused),
        (AttemptOutcome.GAVE_UP, refused),
    ]
    assert NotificationChannel.objects.get().enabled
