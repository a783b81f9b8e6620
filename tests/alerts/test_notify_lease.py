"""The lease is renewed while a send is in flight: a second sender never takes the row."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from alerts.models import AttemptOutcome, DeliveryAttempt, Outbox
from alerts.notify import outbox
from tests.alerts.notify_helpers import flush_at, make_alert, make_channel
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.processes import wait_until
from tests.support.receivers import slow, start_receiver

pytestmark = pytest.mark.usefixtures("validated_payloads")

LEASE = 1.0
SEND = 3.0  # three leases long, under the deadline


@pytest.mark.django_db(transaction=True)
def test_a_send_longer_than_the_lease_is_not_taken_by_a_second_sender(
    settings: pytest.FixtureRequest,
) -> None:
    settings.ALERTS_NOTIFY_LEASE_SECONDS = LEASE  # type: ignore[attr-defined]
    settings.HTTP_TIMEOUT_SECONDS = 10.0  # type: ignore[attr-defined]
    make_alert("gpu-001")
    with start_receiver(slow(SEND)) as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        (row_id,) = flush_at(30)
        results: list[str] = []

        def first_sender() -> None:
            try:
                results.append(outbox.deliver(row_id).outcome)
            finally:
                connection.close()

        sender = threading.Thread(target=first_sender)
        sender.start()
        wait_until(lambda: receiver.requests, 5, "the first sender's request")
        second: list[str] = []
        tried_from = time.monotonic()
        while sender.is_alive():  # a second worker keeps trying, past several leases
            second.append(outbox.deliver(row_id).outcome)
            tried_until = time.monotonic()
            time.sleep(0.1)
        sender.join()
    assert results == [AttemptOutcome.DELIVERED]
    assert tried_until - tried_from > 2 * LEASE and set(second) == {"not claimed"}
    assert len(receiver.requests) == 1
    assert Outbox.objects.get().status == "delivered"
    assert list(DeliveryAttempt.objects.values_list("outcome", flat=True)) == ["delivered"]
