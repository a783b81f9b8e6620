"""Node maintenance: a silence on the node until ended, the commands shown, staff only, bad input refused."""

from __future__ import annotations

from html import escape

import pytest
from django.test import Client
from django.utils import timezone

from alerts import maintenance
from alerts.models import Alert, NodeMaintenance, Silence, SilenceAudit
from alerts.services import evaluate
from tests.alerts import seed

pytestmark = pytest.mark.django_db
NOW = 1_795_000_000.0
HOSTILE = "gpu-007; rm -rf / <b>"


def post(client: Client, **fields: str):  # noqa: ANN201
    return client.post("/maintenance/", fields)


def test_commands_quote_the_node_name_for_the_shell() -> None:
    assert [c.text for c in maintenance.commands(HOSTILE)] == [
        "kubectl cordon 'gpu-007; rm -rf / <b>'",
        "kubectl drain 'gpu-007; rm -rf / <b>' --ignore-daemonsets --delete-emptydir-data",
        "kubectl uncordon 'gpu-007; rm -rf / <b>'",
    ]


def test_maintenance_silences_the_node_until_ended_then_expires_the_silence(
    client: Client, staff_user
) -> None:  # noqa: ANN001
    node = seed.nodes(["gpu-001", "gpu-002"], ports=0)
    client.force_login(staff_user)
    assert post(client, node="gpu-001", action="start", comment="RMA 42").status_code == 302
    row = NodeMaintenance.objects.get()
    silence = Silence.objects.get()
    assert (row.node, row.comment, row.started_by, row.ended_at, row.silence) == (
        "gpu-001", "RMA 42", staff_user, None, silence)  # fmt: skip
    assert (silence.matchers, silence.ends_at, silence.until_resolved, silence.comment) == (
        [{"name": "node", "op": "=", "value": "gpu-001"}], None, False, "Maintenance: RMA 42")  # fmt: skip
    seed.xid(node["gpu-001"], 2, NOW - 60, 48)
    seed.xid(node["gpu-002"], 2, NOW - 60, 48)
    seed.cover(NOW)
    evaluate(now=NOW)
    assert sorted(Alert.objects.values_list("node", "silenced")) == [
        ("gpu-001", True),
        ("gpu-002", False),
    ]
    page = client.get("/nodes/gpu-001/").content.decode()
    assert 'id="maintenance-state">in maintenance<' in page
    assert "kubectl drain gpu-001 --ignore-daemonsets --delete-emptydir-data" in page
    assert "in maintenance</span>" in client.get("/nodes/").content.decode()
    assert post(client, node="gpu-001", action="end").status_code == 302
    silence.refresh_from_db()
    row.refresh_from_db()
    assert (
        silence.ends_at is not None
        and silence.ends_at <= timezone.now()
        and silence.expired_by == staff_user
    )
    assert row.ended_at is not None and row.ended_by == staff_user
    assert list(SilenceAudit.objects.order_by("ts").values_list("action", flat=True)) == [
        "created",
        "expired",
    ]
    assert 'id="maintenance-state"' not in client.get("/nodes/gpu-001/").content.decode()


def test_a_hostile_node_name_is_escaped_on_the_page(client: Client, staff_user) -> None:  # noqa: ANN001
    seed.nodes([HOSTILE], ports=0)
    client.force_login(staff_user)
    page = client.get("/nodes/gpu-007%3B%20rm%20-rf%20%2F%20%3Cb%3E/").content.decode()
    assert "rm -rf / <b>" not in page  # never raw: every occurrence is escaped
    assert escape("kubectl cordon 'gpu-007; rm -rf / <b>'", quote=True) in page


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"node": "gpu-001", "action": "reboot"}, 400),
        ({"node": "gpu-999", "action": "start", "comment": "x"}, 404),
    ],
)
def test_bad_requests_are_refused_and_change_nothing(
    client: Client, staff_user, fields, status
) -> None:  # noqa: ANN001
    seed.nodes(["gpu-001"], ports=0)
    client.force_login(staff_user)
    answer = post(client, **fields)
    assert (answer.status_code, answer["Content-Type"]) == (status, "application/json")
    assert (NodeMaintenance.objects.count(), Silence.objects.count()) == (0, 0)


def test_only_staff_may_and_a_comment_is_required(client: Client, user, staff_user) -> None:  # noqa: ANN001
    seed.nodes(["gpu-001"], ports=0)
    client.force_login(user)
    assert post(client, node="gpu-001", action="start", comment="x").status_code == 403
    assert "maintenance-start" not in client.get("/nodes/gpu-001/").content.decode()
    client.force_login(staff_user)
    assert post(client, node="gpu-001", action="start", comment="  ").status_code == 302
    assert (NodeMaintenance.objects.count(), Silence.objects.count()) == (0, 0)
    maintenance.start("gpu-001", staff_user, "once")
    with pytest.raises(maintenance.MaintenanceError, match="already in maintenance"):
        maintenance.start("gpu-001", staff_user, "twice")
    assert (NodeMaintenance.objects.count(), Silence.objects.count()) == (1, 1)
