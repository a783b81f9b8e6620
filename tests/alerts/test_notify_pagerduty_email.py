"""PagerDuty (a local Events API receiver) and email (a local aiosmtpd server): exact payloads."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.test import Client

from alerts.models import Outbox
from alerts.notify import outbox
from tests.alerts.notify_helpers import (
    STARTED,
    flush_at,
    make_alert,
    make_channel,
    resolve,
    rfc3339,
    send_all,
)
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.processes import free_port
from tests.support.receivers import Reply, start_receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]
ROUTING_KEY = "R0UT1NGKEY0123456789abcdefABCDEF"


@pytest.fixture(autouse=True)
def _notify_settings(settings: pytest.FixtureRequest) -> None:
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]


def test_pagerduty_trigger_then_resolve_share_the_dedup_key(
    client: Client, staff_user: Any
) -> None:
    alert = make_alert("gpu-001", leaf_switch="leaf-07", severity="warning")
    with start_receiver(Reply(202, body='{"status":"success"}')) as receiver:
        channel = make_channel("pagerduty", receiver.url + "/v2/enqueue", secret=ROUTING_KEY)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
        resolve(alert)
        flush_at(30 + 300)
        send_all()
    trigger, resolution = (r.json() for r in receiver.requests)
    assert [r.path for r in receiver.requests] == ["/v2/enqueue", "/v2/enqueue"]
    assert trigger == {
        "routing_key": ROUTING_KEY,
        "event_action": "trigger",
        "dedup_key": alert.fingerprint,
        "payload": {
            "summary": "ib_port_errors: gpu-001: 130 symbol errors/hour",
            "source": "gpu-001",
            "severity": "warning",
            "timestamp": rfc3339(STARTED),
            "class": "ib_port_errors",
            "group": '{}:{alertname="ib_port_errors", leaf_switch="leaf-07"}',
            "custom_details": {
                "labels": {
                    "alertname": "ib_port_errors",
                    "severity": "warning",
                    "node": "gpu-001",
                    "leaf_switch": "leaf-07",
                },
                "annotations": {
                    "summary": "gpu-001: 130 symbol errors/hour",
                    "value": "130",
                    "context": "symbol_errors_per_hour=130",
                    "node_url": "http://cw.example/nodes/gpu-001/",
                },
            },
        },
        "links": [
            {
                "href": f"http://cw.example/admin/alerts/alert/{alert.id}/change/",
                "text": "Alert in ClusterWatch",
            },
            {"href": "http://cw.example/nodes/gpu-001/", "text": "Node gpu-001"},
        ],
        "client": "ClusterWatch",
        "client_url": "http://cw.example",
    }
    assert resolution == {
        "routing_key": ROUTING_KEY,
        "event_action": "resolve",
        "dedup_key": alert.fingerprint,
    }
    assert list(Outbox.objects.values_list("status", flat=True)) == ["delivered", "delivered"]
    client.force_login(staff_user)
    page = client.get(f"/admin/alerts/notificationchannel/{channel.id}/change/").content.decode()
    assert ROUTING_KEY not in page and "set, ending …CDEF" in page


class Inbox:
    """An aiosmtpd handler that keeps every envelope."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def messages(self) -> list[email.message.EmailMessage]:
        return [
            email.message_from_bytes(e.content, policy=email.policy.default)  # type: ignore[misc]
            for e in self.envelopes
        ]


@pytest.fixture
def smtp(settings: pytest.FixtureRequest) -> Iterator[Inbox]:
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"  # type: ignore[attr-defined]
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port  # type: ignore[attr-defined]
    settings.DEFAULT_FROM_EMAIL = "clusterwatch@cw.example"  # type: ignore[attr-defined]
    try:
        yield inbox
    finally:
        controller.stop()


def test_email_is_one_mail_per_group_in_plain_text_and_html(smtp: Inbox) -> None:
    first = make_alert("gpu-001", leaf_switch="leaf-07")
    make_alert("gpu-002", leaf_switch="leaf-07", summary_note="<b>&</b>")
    make_channel("email", "", recipients="ops@cw.example, oncall@cw.example")
    flush_at(0)  # the group appears; group_wait starts
    (row_id,) = flush_at(30)
    send_all()
    (envelope,) = smtp.envelopes
    assert envelope.mail_from == "clusterwatch@cw.example"
    assert envelope.rcpt_tos == ["ops@cw.example", "oncall@cw.example"]
    (mail,) = smtp.messages()
    assert mail["Subject"] == "[FIRING:2] ib_port_errors leaf_switch=leaf-07 (critical)"
    assert mail["To"] == "ops@cw.example, oncall@cw.example"
    assert mail["X-ClusterWatch-Delivery"] == outbox.delivery_id(Outbox.objects.get(id=row_id))
    plain = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert plain == (
        "[FIRING:2] ib_port_errors leaf_switch=leaf-07 (critical)\n"
        "\n"
        "[FIRING] leaf_switch=leaf-07 node=gpu-001\n"
        "  summary: gpu-001: 130 symbol errors/hour\n"
        "  value: 130\n"
        "  node_url: http://cw.example/nodes/gpu-001/\n"
        f"  alert: http://cw.example/admin/alerts/alert/{first.id}/change/\n"
        "\n"
        "[FIRING] leaf_switch=leaf-07 node=gpu-002 summary_note=<b>&</b>\n"
        "  summary: gpu-002: 130 symbol errors/hour\n"
        "  value: 130\n"
        "  node_url: http://cw.example/nodes/gpu-002/\n"
        f"  alert: http://cw.example/admin/alerts/alert/{first.id + 1}/change/\n"
        "\n"
        "ClusterWatch: http://cw.example\n"
    )
    page = mail.get_body(("html",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert page.startswith(
        "<html><body><h2>[FIRING:2] ib_port_errors leaf_switch=leaf-07 (critical)</h2><table>\n"
        "<tr><td>firing</td><td><code>leaf_switch=leaf-07 node=gpu-001</code></td>"
        "<td>gpu-001: 130 symbol errors/hour</td>"
        f'<td><a href="http://cw.example/admin/alerts/alert/{first.id}/change/">alert</a></td></tr>'
    )
    assert "summary_note=&lt;b&gt;&amp;&lt;/b&gt;" in page and "<b>&</b>" not in page
    assert page.rstrip().endswith(
        '<p><a href="http://cw.example">ClusterWatch</a></p></body></html>'
    )


def test_an_unreachable_smtp_server_is_retried(settings: pytest.FixtureRequest) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"  # type: ignore[attr-defined]
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # type: ignore[attr-defined]
    settings.ALERTS_NOTIFY_MAX_ATTEMPTS = 2  # type: ignore[attr-defined]
    settings.ALERTS_NOTIFY_BACKOFF_SECONDS = 0.05  # type: ignore[attr-defined]
    make_alert("gpu-001")
    make_channel("email", "", recipients="ops@cw.example")
    flush_at(0)
    flush_at(30)
    send_all()
    row = Outbox.objects.get()
    assert (row.status, row.attempts) == ("failed", 2)
    assert row.last_error == "SMTP failed: ConnectionRefusedError: [Errno 111] Connection refused"
