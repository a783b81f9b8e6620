"""Notifications end to end: alert rows → groups → outbox → real receivers."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

import pytest

from alerts.models import DeliveryAttempt, NotificationGroup, Outbox
from tests.alerts.notify_helpers import (
    SECRET,
    STARTED,
    T0,
    flush_at,
    make_alert,
    make_channel,
    resolve,
    rfc3339,
    send_all,
)
from tests.alerts.validators import validated_payloads  # noqa: F401 - the fixture
from tests.support.receivers import start_receiver

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("validated_payloads")]


@pytest.fixture(autouse=True)
def _notify_settings(settings: pytest.FixtureRequest) -> None:
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]


def test_webhook_payload_field_by_field_with_a_verified_signature() -> None:
    first = make_alert("gpu-001", leaf_switch="leaf-07", device="mlx5_0", port="1")
    second = make_alert("gpu-002", leaf_switch="leaf-07", device="mlx5_0", port="1")
    with start_receiver() as receiver:
        channel = make_channel("webhook", receiver.url + "/hook")
        assert flush_at(0) == [] and flush_at(29) == []
        assert len(flush_at(30)) == 1
        send_all()
    (request,) = receiver.requests
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert request.headers["X-ClusterWatch-Signature"] == expected
    body = request.json()
    key = '{}:{alertname="ib_port_errors", leaf_switch="leaf-07"}'
    assert body["receiver"] == channel.name == "webhook-ops"
    assert body["status"] == "firing"
    assert body["version"] == "4"
    assert body["groupKey"] == key
    assert body["truncatedAlerts"] == 0
    assert body["externalURL"] == "http://cw.example"
    assert body["groupLabels"] == {"alertname": "ib_port_errors", "leaf_switch": "leaf-07"}
    assert body["commonLabels"] == {
        "alertname": "ib_port_errors",
        "severity": "critical",
        "leaf_switch": "leaf-07",
        "device": "mlx5_0",
        "port": "1",
    }
    assert body["commonAnnotations"] == {"value": "130", "context": "symbol_errors_per_hour=130"}
    assert body["alerts"][0] == {
        "status": "firing",
        "labels": {
            "alertname": "ib_port_errors",
            "severity": "critical",
            "node": "gpu-001",
            "leaf_switch": "leaf-07",
            "device": "mlx5_0",
            "port": "1",
        },
        "annotations": {
            "summary": "gpu-001: 130 symbol errors/hour",
            "value": "130",
            "context": "symbol_errors_per_hour=130",
            "node_url": "http://cw.example/nodes/gpu-001/",
        },
        "startsAt": rfc3339(STARTED),
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": f"http://cw.example/admin/alerts/alert/{first.id}/change/",
        "fingerprint": first.fingerprint,
    }
    assert body["alerts"][1]["fingerprint"] == second.fingerprint


def test_slack_payload_field_by_field_then_the_resolution() -> None:
    alert = make_alert(
        "gpu-001", "gpu_tensor_drift", severity="warning", namespace="ml", run="llama-70b"
    )
    with start_receiver() as receiver:
        make_channel("slack", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
        resolve(alert)
        flush_at(30 + 299)
        assert Outbox.objects.count() == 1  # a change waits group_interval
        flush_at(30 + 300)
        send_all()
    firing, resolved = (r.json() for r in receiver.requests)
    assert firing["text"] == "[FIRING:1] gpu_tensor_drift node=gpu-001 (warning)"
    header, facts, nodes, line, footer = firing["blocks"]
    assert header["text"]["text"] == firing["text"]
    assert facts["text"]["text"] == (
        "*Severity:* warning   *Rule:* gpu_tensor_drift   *Scope:* node=gpu-001"
    )
    assert nodes["text"]["text"] == "*Nodes (1):* <http://cw.example/nodes/gpu-001/|gpu-001>"
    assert line["text"]["text"] == (
        ":red_circle: *<http://cw.example/nodes/gpu-001/|gpu-001>* `namespace=ml run=llama-70b`"
        " value *130*\ngpu-001: 130 symbol errors/hour\n"
        "Run: <http://cw.example/runs/ml/llama-70b/|ml/llama-70b>"
    )
    assert footer["elements"][0]["text"] == "<http://cw.example|ClusterWatch>"
    assert resolved["text"] == "[RESOLVED:1] gpu_tensor_drift node=gpu-001 (warning)"
    assert resolved["blocks"][3]["text"]["text"].startswith(":large_green_circle: *<http")
    assert not NotificationGroup.objects.exists()  # everything notified: the group is done


def test_a_leaf_switch_fault_across_32_nodes_is_one_notification() -> None:
    for i in range(32):
        make_alert(f"gpu-{i:03d}", leaf_switch="leaf-07", device="mlx5_0", port="1")
    make_alert("gpu-900", "node_metrics_missing")
    with start_receiver() as receiver:
        make_channel("slack", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        assert len(flush_at(30)) == 2
        send_all()
    leaf = next(r.json() for r in receiver.requests if "leaf-07" in r.json()["text"])
    assert leaf["text"] == "[FIRING:32] ib_port_errors leaf_switch=leaf-07 (critical)"
    nodes = leaf["blocks"][2]["text"]["text"]
    assert nodes.startswith("*Nodes (32):* <http://cw.example/nodes/gpu-000/|gpu-000>, ")
    assert nodes.count("|gpu-0") == 32
    assert leaf["blocks"][-1]["elements"][0]["text"].startswith("… and 22 more alerts not shown")


def test_a_very_large_group_is_truncated_in_the_webhook(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_MAX_ALERTS = 5  # type: ignore[attr-defined]
    for i in range(12):
        make_alert(f"gpu-{i:03d}", leaf_switch="leaf-07")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    body = receiver.requests[0].json()
    assert [a["labels"]["node"] for a in body["alerts"]] == [f"gpu-{i:03d}" for i in range(5)]
    assert body["truncatedAlerts"] == 7


def test_a_silenced_alert_is_recorded_not_sent_and_sent_after_the_silence_ends() -> None:
    alert = make_alert("gpu-001", silenced=True)
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        assert flush_at(30) == [] and flush_at(600) == []
        assert receiver.requests == []
        alert.silenced = False
        alert.save(update_fields=["silenced"])
        assert flush_at(601) == []  # a new group: group_wait first
        assert len(flush_at(631)) == 1
        send_all()
    (request,) = receiver.requests
    assert request.json()["alerts"][0]["fingerprint"] == alert.fingerprint


def test_a_notified_alert_that_resolves_while_silenced_is_sent_resolved() -> None:
    alert = make_alert("gpu-001")
    never_notified = make_alert("gpu-001", device="mlx5_1", port="1", silenced=True)
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        assert len(flush_at(30)) == 1
        send_all()
        alert.silenced = True
        alert.save(update_fields=["silenced"])
        assert flush_at(60) == []  # muted: not re-sent, still owed a resolution
        resolve(alert, T0 + timedelta(seconds=90))
        resolve(never_notified, T0 + timedelta(seconds=90))
        assert flush_at(329) == []  # a change waits group_interval
        assert len(flush_at(330)) == 1
        send_all()
        assert flush_at(3600) == [] and not NotificationGroup.objects.exists()
    firing, resolved = (r.json() for r in receiver.requests)
    assert [(a["status"], a["fingerprint"]) for a in firing["alerts"]] == [
        ("firing", alert.fingerprint)
    ]
    assert resolved["status"] == "resolved"
    assert [(a["status"], a["fingerprint"], a["endsAt"]) for a in resolved["alerts"]] == [
        ("resolved", alert.fingerprint, "2026-05-01T10:01:30Z")
    ]


def test_inhibited_alerts_are_not_sent() -> None:
    make_alert("gpu-001", "node_metrics_missing")
    make_alert("gpu-001", inhibited=True, device="mlx5_0", port="1")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    (request,) = receiver.requests
    assert [a["labels"]["alertname"] for a in request.json()["alerts"]] == ["node_metrics_missing"]


def test_repeat_interval_re_sends_a_group_that_still_fires() -> None:
    make_alert("gpu-001")
    with start_receiver() as receiver:
        make_channel("webhook", receiver.url, repeat_interval=timedelta(minutes=20))
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        assert flush_at(30 + 600) == []
        assert len(flush_at(30 + 1200)) == 1
        send_all()
    assert len(receiver.requests) == 2
    assert receiver.requests[0].body == receiver.requests[1].body


def test_routing_by_severity_and_labels() -> None:
    make_alert("gpu-001", severity="warning")
    make_alert("gpu-002", severity="critical", pool="inference")
    make_alert("gpu-003", severity="critical", pool="training")
    with start_receiver() as receiver:
        matchers = [{"name": "pool", "op": "=~", "value": "train.*"}]
        make_channel("webhook", receiver.url, min_severity="critical", matchers=matchers)
        flush_at(0)  # the group appears; group_wait starts
        flush_at(30)
        send_all()
    (request,) = receiver.requests
    assert [a["labels"]["node"] for a in request.json()["alerts"]] == ["gpu-003"]


def test_overlapping_flushes_write_each_notification_once() -> None:
    make_alert("gpu-001")
    make_channel("webhook", "http://127.0.0.1:1/")
    flush_at(0)  # the group appears; group_wait starts
    assert len(flush_at(30)) == 1
    assert flush_at(30) == [] and flush_at(31) == []
    assert Outbox.objects.get().key.endswith(":1")
    assert DeliveryAttempt.objects.count() == 0
