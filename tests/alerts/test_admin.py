"""The alerts admin: rule settings validated, history read-only, silences with presets, bulk node silences."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from alerts.models import RuleConfig, Silence, SilenceAudit
from tests.alerts import seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client, staff_user) -> Client:
    client.force_login(staff_user)
    return client


def rule_form(config: RuleConfig, **changes: str) -> dict[str, str]:
    import json

    form = {"enabled": "on", "severity": config.severity, "for_seconds": str(config.for_seconds),
            "keep_firing_for_seconds": str(config.keep_firing_for_seconds), "params": json.dumps(config.params)}  # fmt: skip
    return {**form, **changes}


@pytest.mark.parametrize(
    "model", ["ruleconfig", "alert", "silence", "evaluation", "silenceablenode"]
)
def test_admin_lists_load(admin_client: Client, model: str) -> None:
    response = admin_client.get(f"/admin/alerts/{model}/")
    assert (
        response.status_code in (200, 403)
        if model == "silenceaudit"
        else response.status_code == 200
    )


def test_a_threshold_of_the_wrong_type_is_refused_and_nothing_changes(admin_client: Client) -> None:
    config = RuleConfig.objects.get(rule="gpu_tensor_drift")
    url = f"/admin/alerts/ruleconfig/{config.pk}/change/"
    response = admin_client.post(url, rule_form(config, params='{"util_min": "high"}'))
    assert response.status_code == 200
    assert "params.util_min: expected a number, got &#x27;high&#x27;" in response.content.decode()
    config.refresh_from_db()
    assert config.params["util_min"] == 90.0
    response = admin_client.post(
        url, rule_form(config, params='{"util_min": 85, "tensor_max": 0.05}', for_seconds="300")
    )
    assert response.status_code == 302
    config.refresh_from_db()
    assert (config.params["util_min"], config.for_seconds) == (85, 300)


def test_silence_created_in_the_admin_with_nodes_a_rule_and_a_preset(
    admin_client: Client, staff_user
) -> None:
    response = admin_client.post("/admin/alerts/silence/add/", {
        "nodes": "gpu-001, gpu-002", "rule": "gpu_xid", "matchers": "[]", "preset": "24h",
        "starts_at_0": "", "starts_at_1": "", "comment": "rack 7 maintenance",
    })  # fmt: skip
    assert response.status_code == 302, [
        line for line in response.content.decode().splitlines() if "error" in line
    ]
    silence = Silence.objects.get()
    assert silence.matchers == [{"name": "node", "op": "=~", "value": "gpu\\-001|gpu\\-002"},
                                {"name": "alertname", "op": "=", "value": "gpu_xid"}]  # fmt: skip
    assert (silence.created_by, silence.until_resolved) == (staff_user, False)
    assert (silence.ends_at - silence.starts_at).total_seconds() == 86400
    assert admin_client.get(f"/admin/alerts/silence/{silence.pk}/change/").status_code == 200


def test_silence_without_comment_is_refused(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/alerts/silence/add/",
        {"nodes": "gpu-001", "matchers": "[]", "preset": "1h", "comment": ""},
    )
    assert response.status_code == 200
    assert Silence.objects.count() == 0


def test_nodes_are_silenced_in_bulk_from_the_node_list(admin_client: Client) -> None:
    nodes = seed.nodes(["gpu-001", "gpu-002", "gpu-003"], ports=0)
    ids = [str(nodes["gpu-001"].pk), str(nodes["gpu-003"].pk)]
    form = {"action": "silence_nodes", "_selected_action": ids}
    assert admin_client.post("/admin/alerts/silenceablenode/", form).status_code == 200
    response = admin_client.post(
        "/admin/alerts/silenceablenode/",
        {**form, "apply": "1", "preset": "until_resolved", "comment": "RMA"},
    )
    assert response.status_code == 302
    assert sorted(s.matchers[0]["value"] for s in Silence.objects.all()) == ["gpu-001", "gpu-003"]
    assert all(s.until_resolved and s.comment == "RMA" for s in Silence.objects.all())
    assert SilenceAudit.objects.filter(action="created").count() == 2


def test_backtest_button_reports_what_would_have_fired(admin_client: Client) -> None:
    now = float(int(time.time() // 30) * 30)
    node = seed.nodes(["gpu-001"], ports=0)["gpu-001"]
    seed.xid(node, 1, now - 3 * 3600, 79)
    seed.xid(node, 2, now - 600, 48)
    seed.cover(now)
    config = RuleConfig.objects.get(rule="gpu_xid")
    response = admin_client.get(f"/admin/alerts/ruleconfig/{config.pk}/backtest/?since=1d")
    assert response.status_code == 200
    assert "2 alert(s) would have fired" in response.content.decode()
