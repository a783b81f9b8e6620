"""The Celery tasks with a real worker: flush writes, the worker delivers, once."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from alerts.models import Outbox
from alerts.notify import tasks
from tests.alerts.notify_helpers import make_alert, make_channel
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.processes import CeleryWorker, wait_until
from tests.support.receivers import start_receiver

pytestmark = pytest.mark.usefixtures("validated_payloads")


@pytest.mark.django_db(transaction=True)
def test_the_worker_delivers_what_the_flush_task_queues_exactly_once(
    celery_worker: CeleryWorker,
) -> None:
    make_alert("gpu-001", leaf_switch="leaf-07")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url, group_wait=timedelta(seconds=1))
        assert tasks.flush_notifications() == 0  # the group appears
        time.sleep(1.1)
        assert tasks.flush_notifications() == 1
        row = Outbox.objects.get()
        wait_until(lambda: receiver.requests, 20, "the worker's delivery")
        # Duplicate task messages, as after a broker redelivery; then a flush that finds
        # nothing left to queue. Counted once the worker has run every duplicate.
        for _ in range(3):
            tasks.deliver_notification.delay(row.id)
        assert tasks.flush_notifications() == 0
        celery_worker.drain("notify")
    row.refresh_from_db()
    assert row.status == "delivered"
    assert len(receiver.requests) == 1
    assert receiver.requests[0].json()["groupLabels"] == {
        "alertname": "ib_port_errors",
        "leaf_switch": "leaf-07",
    }
