"""The admin's notification pages: the test action shows the receiver's answer; the delivery log."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from alerts.models import DeliveryAttempt
from tests.alerts.notify_helpers import flush_at, make_alert, make_channel, send_all
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.receivers import OK, Reply, start_receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]


@pytest.fixture(autouse=True)
def _fast_retries(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_BACKOFF_SECONDS = 0.05  # type: ignore[attr-defined]
    settings.ALERTS_NOTIFY_BACKOFF_MAX_SECONDS = 0.2  # type: ignore[attr-defined]


def send_test(client: Client, channel_id: int) -> list[str]:
    response = client.post(
        "/admin/alerts/notificationchannel/",
        {"action": "send_test_notification", "_selected_action": [channel_id]},
        follow=True,
    )
    return [str(message) for message in response.context["messages"]]


def test_the_test_action_shows_what_the_receiver_answered(client: Client, staff_user: Any) -> None:
    client.force_login(staff_user)
    with start_receiver(Reply(400, body="invalid_blocks"), Reply(200, body="ok, got it")) as rx:
        channel = make_channel("slack", rx.url)
        refused = send_test(client, channel.id)
        accepted = send_test(client, channel.id)
    assert refused == [
        "slack-ops: test notification refused, not retried (HTTP 400): HTTP 400: invalid_blocks;"
        " the receiver answered: invalid_blocks"
    ]
    assert accepted == [
        "slack-ops: test notification delivered (HTTP 200); the receiver answered: ok, got it"
    ]
    assert len(rx.requests) == 2


def test_the_delivery_log_lists_attempts_with_status_latency_and_error(
    client: Client, staff_user: Any
) -> None:
    make_alert("gpu-001")
    with start_receiver(Reply(503, body="busy"), OK) as receiver:
        channel = make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    client.force_login(staff_user)
    listing = client.get("/admin/alerts/notificationchannel/").content.decode()
    log_url = f"/admin/alerts/notificationchannel/{channel.id}/deliveries/"
    assert f'<a href="{log_url}">attempts</a>' in listing
    page = client.get(log_url).content.decode()
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    cells = [re.findall(r"<td>(.*?)</td>", row, re.S) for row in body.split("<tr>")[1:]]
    latencies = [a.latency_ms for a in DeliveryAttempt.objects.order_by("-started_at")]
    key = f"group:{channel.id}:{channel.groups.get().id}:1"
    assert [row[1:] for row in cells] == [
        [key, "2", "Delivered", "200", str(latencies[0]), "", "ok"],
        [key, "1", "failed, will retry", "503", str(latencies[1]), "HTTP 503: busy", "busy"],
    ]
    assert all(latency is not None and latency >= 0 for latency in latencies)


def test_the_delivery_log_page_sends_a_test_to_its_channel(client: Client, staff_user: Any) -> None:
    client.force_login(staff_user)
    with start_receiver(Reply(200, body="thanks")) as receiver:
        channel = make_channel("webhook", receiver.url)
        other = make_channel("slack", receiver.url, name="slack-ops")
        log_url = f"/admin/alerts/notificationchannel/{channel.id}/deliveries/"
        assert f'action="/admin/alerts/notificationchannel/{channel.id}/send-test/"' in (
            client.get(log_url).content.decode()
        )
        assert (
            client.get(f"/admin/alerts/notificationchannel/{channel.id}/send-test/").status_code
            == 405
        )
        response = client.post(
            f"/admin/alerts/notificationchannel/{channel.id}/send-test/", follow=True
        )
    assert response.redirect_chain == [(log_url, 302)]
    shown = [str(message) for message in response.context["messages"]]
    assert shown == [
        "webhook-ops: test notification delivered (HTTP 200); the receiver answered: thanks"
    ]
    (request,) = receiver.requests
    assert request.json()["receiver"] == "webhook-ops"
    assert DeliveryAttempt.objects.filter(channel=other).count() == 0
    assert "thanks" in response.content.decode()
