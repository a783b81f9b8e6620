"""Acknowledging and assigning alerts: notifications (local receivers), the API, the audit trail."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from alerts import acks
from alerts.models import AlertAudit, AlertTriage
from tests.alerts.notify_helpers import T0, flush_at, make_alert, make_channel, resolve, send_all
from tests.support.receivers import start_receiver

pytestmark = pytest.mark.django_db
HOUR = 3600.0
REPEAT = 4 * HOUR  # the channels' repeat_interval


def audit_rows() -> list[tuple]:
    return [
        (row.alert_ref, row.action, row.user.get_username() if row.user else None, row.detail)
        for row in AlertAudit.objects.order_by("ts", "id")
    ]


def test_an_acknowledged_alert_is_not_repeated_but_still_resolves(staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)
        flush_at(30)  # group_wait: the first notification
        send_all()
        assert [r.json()["status"] for r in receiver.requests] == ["firing"]
        acks.acknowledge(alert, staff_user, "replacing the cable", now=T0 + timedelta(minutes=1))
        for seconds in (60, 400, REPEAT + 30, 2 * REPEAT + 30):  # two repeat intervals pass
            flush_at(seconds)
        send_all()  # the outbox is drained: nothing was written
        assert len(receiver.requests) == 1
        resolve(alert, T0 + timedelta(seconds=2 * REPEAT + 40))
        flush_at(2 * REPEAT + 60)
        send_all()
    assert [r.json()["status"] for r in receiver.requests] == ["firing", "resolved"]
    assert receiver.requests[1].json()["alerts"][0]["annotations"]["acknowledged"] == (
        "by root at 2026-05-01T10:01:00Z: replacing the cable"
    )
    assert audit_rows() == [
        (alert.pk, "acked", "root", {"comment": "replacing the cable", "until": None})
    ]


def test_without_the_acknowledgement_the_alert_repeats(staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)
        flush_at(30)
        acks.acknowledge(alert, staff_user, now=T0 + timedelta(minutes=1))
        flush_at(REPEAT + 30)  # acknowledged: not repeated
        acks.unacknowledge(alert, staff_user, now=T0 + timedelta(hours=5))
        flush_at(REPEAT + 60)  # no longer acknowledged: the repeat is due
        send_all()
    assert [r.json()["status"] for r in receiver.requests] == ["firing", "firing"]
    assert [row[1] for row in audit_rows()] == ["acked", "unacked"]


def test_an_acknowledgement_until_lapses_and_repeats_resume(staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    until = T0 + timedelta(hours=6)
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)
        flush_at(30)
        acks.acknowledge(alert, staff_user, "looking", until, now=T0 + timedelta(minutes=1))
        flush_at(REPEAT + 30)  # before until: not repeated
        flush_at(6 * HOUR + 30)  # after until: repeated
        send_all()
    assert len(receiver.requests) == 2
    assert "acknowledged" not in receiver.requests[1].json()["alerts"][0]["annotations"]
    assert audit_rows() == [
        (alert.pk, "acked", "root", {"comment": "looking", "until": "2026-05-01T16:00:00+00:00"})
    ]


def test_a_channel_that_asks_is_told_of_the_acknowledgement(staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    with start_receiver() as told, start_receiver() as quiet:
        make_channel("webhook", told.url, name="told", notify_acks=True)
        make_channel("webhook", quiet.url, name="quiet")
        flush_at(0)
        flush_at(30)
        acks.acknowledge(alert, staff_user, "on it", now=T0 + timedelta(minutes=1))
        flush_at(60)  # inside group_interval: not yet
        flush_at(330)  # group_interval after the first notification
        send_all()
    assert len(quiet.requests) == 1
    assert [r.json()["alerts"][0]["annotations"].get("acknowledged") for r in told.requests] == [
        None,
        "by root at 2026-05-01T10:01:00Z: on it",
    ]


def test_pagerduty_is_sent_an_acknowledge_event(staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    with start_receiver() as receiver:
        make_channel("pagerduty", receiver.url, secret="routing-key", notify_acks=True)
        flush_at(0)
        flush_at(30)
        acks.acknowledge(alert, staff_user, now=T0 + timedelta(minutes=1))
        flush_at(330)
        send_all()
    actions = [(r.json()["event_action"], r.json()["dedup_key"]) for r in receiver.requests]
    assert actions == [("trigger", alert.fingerprint), ("acknowledge", alert.fingerprint)]
    assert receiver.requests[1].json() == {
        "routing_key": "routing-key",
        "event_action": "acknowledge",
        "dedup_key": alert.fingerprint,
    }


# --- the API ------------------------------------------------------------------------------------


def post(client: Client, path: str, body: object, method: str = "post"):  # noqa: ANN201
    return getattr(client, method)(path, json.dumps(body), content_type="application/json")


def test_the_api_acknowledges_and_assigns_with_an_audit_trail(
    client: Client, staff_user, user
) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    client.force_login(staff_user)
    body = {
        "comment": "reseating the HCA",
        "until": "2099-01-01T00:00:00Z",
        "assignee": user.username,
    }
    response = post(client, f"/api/v1/alerts/{alert.pk}/ack", {**body, "until": None})
    assert response.status_code == 200
    answer = response.json()
    assert (answer["acknowledged"]["by"], answer["acknowledged"]["comment"], answer["assignee"]) == (
        "root", "reseating the HCA", user.username,
    )  # fmt: skip
    assert (
        post(client, f"/api/v1/alerts/{alert.pk}/assign", {"assignee": None}).json()["assignee"]
        is None
    )
    deleted = client.delete(f"/api/v1/alerts/{alert.pk}/ack")
    assert (deleted.status_code, deleted.json()["acknowledged"]) == (200, None)
    assert audit_rows() == [
        (alert.pk, "acked", "root", {"comment": "reseating the HCA", "until": None}),
        (alert.pk, "assigned", "root", {"assignee": user.username}),
        (alert.pk, "unassigned", "root", {"previous": user.username}),
        (alert.pk, "unacked", "root", {}),
    ]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"comment": 5}, 400, "comment"),
        ({"comment": "x" * 2001}, 400, "comment"),
        ({"until": "yesterday"}, 400, "until"),
        ({"until": "2000-01-02T00:00:00Z"}, 400, "until"),
        ({"until": "2999-01-01T00:00:00Z"}, 400, "until"),
        ({"assignee": "nobody-here"}, 400, "assignee"),
        ({"colour": "red"}, 400, "colour"),
        (["comment"], 400, "body"),
    ],
)
def test_bad_acknowledgements_are_refused_and_change_nothing(
    client: Client,
    staff_user,
    body: object,
    status: int,
    field: str,  # noqa: ANN001
) -> None:
    alert = make_alert("gpu-001")
    client.force_login(staff_user)
    response = post(client, f"/api/v1/alerts/{alert.pk}/ack", body)
    assert (response.status_code, response.json()["field"]) == (status, field)
    assert (AlertTriage.objects.count(), AlertAudit.objects.count()) == (0, 0)


def test_a_resolved_or_unknown_alert_cannot_be_acknowledged(client: Client, staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001", state="resolved")
    client.force_login(staff_user)
    assert post(client, f"/api/v1/alerts/{alert.pk}/ack", {}).status_code == 409
    assert post(client, f"/api/v1/alerts/{alert.pk + 1}/ack", {}).status_code == 404
    assert client.delete(f"/api/v1/alerts/{alert.pk}/ack").status_code == 409
    assert AlertAudit.objects.count() == 0


def test_acknowledging_needs_the_permission(client: Client, user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    client.force_login(user)
    assert post(client, f"/api/v1/alerts/{alert.pk}/ack", {}).status_code == 403
    assert post(client, f"/api/v1/alerts/{alert.pk}/assign", {"assignee": None}).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="change_alerttriage"))
    user = type(user).objects.get(pk=user.pk)  # permissions are cached per instance
    client.force_login(user)
    assert post(client, f"/api/v1/alerts/{alert.pk}/ack", {}).status_code == 200


def test_the_alert_page_acknowledges_and_assigns(client: Client, staff_user) -> None:  # noqa: ANN001
    alert = make_alert("gpu-001")
    client.force_login(staff_user)
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "Acknowledge</button>" in page
    back = client.post(f"/alerts/{alert.pk}/triage", {"action": "ack", "comment": "on it"})
    assert (back.status_code, back["Location"]) == (302, f"/alerts/{alert.pk}/")
    client.post(f"/alerts/{alert.pk}/triage", {"action": "assign", "assignee": "root"})
    page = client.get(f"/alerts/{alert.pk}/").content.decode()
    assert "Acknowledged by <b>root</b>" in page and "Assignee: root" in page
    listed = client.get("/alerts/").content.decode()
    assert "acked · root" in listed
    assert [row[1] for row in audit_rows()] == ["acked", "assigned"]
    # An open redirect is refused: back to the alert page.
    away = client.post(
        f"/alerts/{alert.pk}/triage", {"action": "unack", "next": "https://evil.example/"}
    )
    assert away["Location"] == f"/alerts/{alert.pk}/"
