"""Rule overrides per pool and per GPU model: evaluation, backtest, admin validation, API."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.test import Client

from alerts.backtest import backtest
from alerts.models import Alert, RuleOverride
from alerts.services import evaluate
from ingest.models import Node
from tests.alerts import seed
from tests.alerts.test_services import drift
from tests.support.clock import pinned

pytestmark = pytest.mark.django_db
NOW = float(int(time.time() // 30) * 30)


@pytest.fixture(autouse=True)
def _evaluations_now() -> Iterator[None]:
    """Evaluations read ``core.clock``: pinned at NOW, however long after import a test runs
    (NOW is taken at import; the wall clock would make the seeded cursors look stale)."""
    with pinned(datetime.fromtimestamp(NOW, UTC)):
        yield


H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def drifting() -> dict:
    """gpu-001 (training, H100) and gpu-002 (inference): GPU 3 of each drifts at 72 W for 12 min."""
    made = seed.nodes(["gpu-001", "gpu-002"], ports=1)
    Node.objects.filter(name="gpu-001").update(gpu_model=H100)
    Node.objects.filter(name="gpu-002").update(pool="inference")
    seed.run("llama", made.values(), NOW - 7200, NOW + 3600)
    for node in made.values():
        seed.write_gpu(seed.gpu_rows(node, NOW - 1200, NOW, **drift(NOW - 720, NOW + 1)))
    seed.cover(NOW)
    return made


def firing_nodes() -> set[str]:
    return set(
        Alert.objects.filter(rule="gpu_tensor_drift", state="firing").values_list("node", flat=True)
    )


def override(scope: str, value: str, **params: object) -> RuleOverride:
    return RuleOverride.objects.create(
        rule="gpu_tensor_drift", scope=scope, value=value, params=params
    )


def test_without_overrides_both_nodes_fire(drifting) -> None:  # noqa: ANN001
    evaluate(now=NOW + 5)
    assert firing_nodes() == {"gpu-001", "gpu-002"}


def test_a_pool_override_judges_only_that_pools_nodes(drifting) -> None:  # noqa: ANN001
    override("pool", "inference", power_max_watts=50.0)  # 72 W is not "idle" for inference
    evaluate(now=NOW + 5)
    assert firing_nodes() == {"gpu-001"}


def test_a_gpu_model_override_wins_over_the_pool_override(drifting) -> None:  # noqa: ANN001
    override("pool", "training", power_max_watts=500.0)
    override("gpu_model", H100, power_max_watts=50.0)
    evaluate(now=NOW + 5)
    assert firing_nodes() == {"gpu-002"}


def test_backtest_takes_the_stored_and_the_given_overrides(drifting) -> None:  # noqa: ANN001
    def nodes(report) -> set[str]:  # noqa: ANN001
        return {fired.labels["node"] for fired in report.fired}

    assert nodes(backtest("gpu_tensor_drift", 1800, now=NOW + 5)) == {"gpu-001", "gpu-002"}
    scoped = [("pool", "inference", {"power_max_watts": 50.0})]
    assert nodes(backtest("gpu_tensor_drift", 1800, now=NOW + 5, scoped=scoped)) == {"gpu-001"}
    override("gpu_model", H100, power_max_watts=50.0)
    assert nodes(backtest("gpu_tensor_drift", 1800, now=NOW + 5, scoped=scoped)) == set()
    out = io.StringIO()
    call_command("backtest_rule", "gpu_tensor_drift", "--since", "30m", "--override",
                 "pool=inference:power_max_watts=500", stdout=out)  # fmt: skip
    assert "1 alert(s) would have fired" in out.getvalue() and "node=gpu-002" in out.getvalue()


def test_an_override_with_a_bad_param_is_refused_naming_it() -> None:
    row = RuleOverride(
        rule="gpu_tensor_drift", scope="pool", value="training", params={"util_min": "high"}
    )
    with pytest.raises(ValidationError, match="params.util_min: expected a number, got 'high'"):
        row.full_clean()


def post(client: Client, body: object):  # noqa: ANN201
    return client.post("/api/v1/rule-overrides", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rule": "gpu_tensor_drift", "scope": "rack", "value": "r1", "params": {}}, "scope"),
        ({"rule": "gpu_drift", "scope": "pool", "value": "training", "params": {}}, "rule"),
        (
            {
                "rule": "gpu_tensor_drift",
                "scope": "pool",
                "value": "training",
                "params": {"util_min": "x"},
            },
            "params.util_min",
        ),
        (
            {
                "rule": "gpu_tensor_drift",
                "scope": "pool",
                "value": "training",
                "params": {"colour": 1},
            },
            "params.colour",
        ),
        ({"rule": "gpu_tensor_drift", "scope": "pool", "value": "", "params": {}}, "value"),
        ({"rule": "gpu_tensor_drift", "scope": "pool", "value": "t", "params": {}, "x": 1}, "x"),
    ],
)
def test_bad_overrides_are_refused_and_change_nothing(
    client: Client, staff_user, body, field
) -> None:  # noqa: ANN001
    client.force_login(staff_user)
    response = post(client, body)
    assert (response.status_code, response.json()["field"]) == (400, field)
    assert not RuleOverride.objects.exists()


def test_the_api_creates_replaces_lists_and_deletes_overrides(
    client: Client, staff_user, user
) -> None:  # noqa: ANN001
    body = {
        "rule": "gpu_tensor_drift",
        "scope": "gpu_model",
        "value": H100,
        "params": {"util_min": 85},
    }
    client.force_login(user)
    assert post(client, body).status_code == 403
    client.force_login(staff_user)
    created = post(client, body)
    assert (created.status_code, created.json()["params"]) == (201, {"util_min": 85.0})
    replaced = post(client, {**body, "params": {"util_min": 80}})
    assert (replaced.status_code, replaced.json()["id"]) == (200, created.json()["id"])
    listed = client.get("/api/v1/rule-overrides").json()["overrides"]
    assert [(o["rule"], o["scope"], o["value"], o["params"], o["updated_by"]) for o in listed] == [
        ("gpu_tensor_drift", "gpu_model", H100, {"util_min": 80.0}, "root")
    ]
    assert client.delete(f"/api/v1/rule-overrides/{created.json()['id']}").status_code == 200
    assert client.delete(f"/api/v1/rule-overrides/{created.json()['id']}").status_code == 404
    assert not RuleOverride.objects.exists()
