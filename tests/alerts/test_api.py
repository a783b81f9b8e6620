"""GET /api/v1/alerts, GET/POST /api/v1/silences, DELETE /api/v1/silences/<id>."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from alerts.models import Alert, Silence, SilenceAudit
from core.models import APIToken

pytestmark = [pytest.mark.django_db]
NOW = timezone.now().replace(microsecond=0)


def alert(**fields: object) -> Alert:
    values = dict(rule="gpu_xid", fingerprint="f" * 64, labels={"alertname": "gpu_xid", "node": "gpu-001", "gpu": "2"},
                  node="gpu-001", severity="critical", state="firing", value=79.0, summary="XID 79 on gpu-001 GPU 2",
                  pending_since=NOW - timedelta(minutes=10), firing_at=NOW, last_match_at=NOW)  # fmt: skip
    return Alert.objects.create(**{**values, **fields})


def post(client: Client, body: object, **headers: str):
    return client.post(
        "/api/v1/silences", json.dumps(body), content_type="application/json", **headers
    )


def test_alerts_are_listed_with_their_fields(logged_in_client: Client) -> None:
    firing = alert()
    alert(
        fingerprint="e" * 64,
        rule="ib_link_flap",
        node="gpu-002",
        state="resolved",
        resolved_at=NOW,
        labels={},
    )
    body = logged_in_client.get("/api/v1/alerts?state=firing").json()
    assert body == {"alerts": [{
        "id": firing.pk, "rule": "gpu_xid", "state": "firing", "severity": "critical",
        "labels": {"alertname": "gpu_xid", "node": "gpu-001", "gpu": "2"}, "node": "gpu-001",
        "started_at": (NOW - timedelta(minutes=10)).isoformat(), "firing_at": NOW.isoformat(),
        "resolved_at": None, "value": 79.0, "summary": "XID 79 on gpu-001 GPU 2",
        "silenced": False, "inhibited": False, "acknowledged": None, "assignee": None, "hurts": [],
    }], "next": None}  # fmt: skip
    assert [
        a["rule"] for a in logged_in_client.get("/api/v1/alerts?node=gpu-002").json()["alerts"]
    ] == ["ib_link_flap"]
    assert logged_in_client.get("/api/v1/alerts?rule=gpu_tensor_drift").json() == {
        "alerts": [],
        "next": None,
    }


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=burning", "state"),
        ("rule=gpu_drift", "rule"),
        ("colour=red", "colour"),
        ("limit=lots", "limit"),
    ],
)
def test_bad_alert_filters_are_rejected_naming_the_field(
    logged_in_client: Client, query: str, field: str
) -> None:
    response = logged_in_client.get(f"/api/v1/alerts?{query}")
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_the_api_needs_authentication(client: Client) -> None:
    assert client.get("/api/v1/alerts").status_code == 401


def test_staff_creates_lists_and_expires_a_silence(client: Client, staff_user) -> None:
    client.force_login(staff_user)
    body = {
        "matchers": [{"name": "node", "op": "=", "value": "gpu-001"}],
        "preset": "4h",
        "comment": "RMA 42",
    }
    created = post(client, body)
    assert created.status_code == 201
    silence = Silence.objects.get()
    assert (silence.comment, silence.created_by, silence.ends_at - silence.starts_at) == (
        "RMA 42",
        staff_user,
        timezone.timedelta(hours=4),
    )
    assert created.json()["state"] == "active"
    assert [s["id"] for s in client.get("/api/v1/silences").json()["silences"]] == [silence.pk]
    expired = client.delete(f"/api/v1/silences/{silence.pk}")
    assert expired.json()["state"] == "expired"
    assert list(SilenceAudit.objects.order_by("ts").values_list("action", flat=True)) == [
        "created",
        "expired",
    ]
    assert client.delete("/api/v1/silences/999999").status_code == 404


START = "2030-01-01T12:00:00Z"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "starts_at": START, "ends_at": "2030-01-01T11:00:00Z", "comment": "x"}, "ends_at"),
        ({"matchers": [{"name": "alertname", "op": "=", "value": "gpu_drift"}], "preset": "1h", "comment": "x"}, "matchers[0].value"),
        ({"matchers": [{"name": "node", "op": "=~", "value": "gpu-(0"}], "preset": "1h", "comment": "x"}, "matchers[0].value"),
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "preset": "1h", "comment": "x", "colour": "red"}, "colour"),
        ({"matchers": [{"name": "node", "op": "=", "value": 7}], "preset": "1h", "comment": "x"}, "matchers[0].value"),
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "preset": "1h", "comment": 5}, "comment"),
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "preset": "1h", "comment": ""}, "comment"),
        ({"matchers": [{"name": "node", "op": "==", "value": "a"}], "preset": "1h", "comment": "x"}, "matchers[0].op"),
        ({"matchers": [], "preset": "1h", "comment": "x"}, "matchers"),
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "preset": "2d", "comment": "x"}, "preset"),
        ({"matchers": [{"name": "node", "op": "=", "value": "a"}], "starts_at": "tomorrow", "preset": "1h", "comment": "x"}, "starts_at"),
        ([1, 2], "body"),
    ],
)  # fmt: skip
def test_bad_silences_are_rejected_naming_the_field_and_nothing_changes(
    client: Client, staff_user, body, field
) -> None:
    client.force_login(staff_user)
    response = post(client, body)
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert Silence.objects.count() == 0
    assert SilenceAudit.objects.count() == 0


def test_ordinary_users_and_narrow_tokens_cannot_write_silences(
    logged_in_client: Client, client: Client, staff_user
) -> None:
    body = {"matchers": [{"name": "node", "op": "=", "value": "a"}], "preset": "1h", "comment": "x"}
    assert post(logged_in_client, body).status_code == 403
    _, read = APIToken.issue(staff_user, scope=APIToken.Scope.READ)
    assert post(client, body, HTTP_AUTHORIZATION=f"Bearer {read}").status_code == 403
    assert client.get("/api/v1/silences", HTTP_AUTHORIZATION=f"Bearer {read}").status_code == 200
    _, write = APIToken.issue(staff_user, scope=APIToken.Scope.CREATE_RUNS)
    assert post(client, body, HTTP_AUTHORIZATION=f"Bearer {write}").status_code == 201
    assert Silence.objects.count() == 1
