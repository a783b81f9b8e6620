"""Lifecycle, history, inhibition and silences on real Postgres, rows written into ingest's tables."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from alerts.models import Alert, AlertEvent, Evaluation, Silence, SilenceAudit
from alerts.rules.series import iso
from alerts.services import evaluate
from alerts.silences import create_silence, expire_silence, node_matchers
from tests.alerts import seed
from tests.support.clock import pinned

pytestmark = pytest.mark.django_db
NOW = float(int(time.time() // 30) * 30)


@pytest.fixture(autouse=True)
def _evaluations_now() -> Iterator[None]:
    """Evaluations read ``core.clock``: pinned at NOW, however long after import a test runs
    (NOW is taken at import; the wall clock would make the seeded cursors look stale)."""
    with pinned(datetime.fromtimestamp(NOW, UTC)):
        yield


def drift(start: float, end: float, gpu: int = 3):
    """Values of a GPU drifting between start and end (others healthy)."""
    return seed.drifting(lambda ts, g: g == gpu and start <= ts < end)


@pytest.fixture
def cluster() -> dict:
    made = seed.nodes(["gpu-001", "gpu-002"], ports=2)
    seed.run("llama", made.values(), NOW - 7200, NOW + 3600)
    return made


def history(alert: Alert) -> list[str]:
    return list(AlertEvent.objects.filter(alert=alert).values_list("kind", flat=True))


def test_drift_sustained_in_stored_data_fires_at_the_first_evaluation(cluster: dict) -> None:
    seed.write_gpu(seed.gpu_rows(cluster["gpu-001"], NOW - 1200, NOW, **drift(NOW - 720, NOW + 1)))
    seed.write_gpu(seed.gpu_rows(cluster["gpu-002"], NOW - 1200, NOW))
    seed.cover(NOW)
    result = evaluate(now=NOW + 5)
    alert = Alert.objects.get()
    assert (alert.rule, alert.state, alert.node, alert.severity) == (
        "gpu_tensor_drift",
        "firing",
        "gpu-001",
        "critical",
    )
    assert alert.labels == {"alertname": "gpu_tensor_drift", "severity": "critical", "node": "gpu-001", "gpu": "3",
                            "namespace": "train", "run": "llama", "pool": "training"}  # fmt: skip
    # The run it hurts, as of its start: both nodes, 8 GPUs each (their samples say so).
    assert alert.context["hurts"] == [{"namespace": "train", "run": "llama", "queue": "", "cluster_queue": "",
                                       "team": "", "gpus": 16, "nodes": 2}]  # fmt: skip
    assert alert.pending_since == seed.dt(NOW - 720)
    assert alert.firing_at == seed.dt(NOW - 120)
    assert alert.value == 0.003
    assert alert.context["pod"] == "llama-0" and alert.context["power"] == 72.0
    assert (result.firing, result.changes) == (1, 1)
    assert history(alert) == ["firing"]
    assert evaluate(now=NOW + 10).changes == 0
    assert Evaluation.objects.count() == 2


def test_pending_then_firing_then_resolved_is_one_alert_with_its_history(cluster: dict) -> None:
    node = cluster["gpu-001"]
    seed.write_gpu(seed.gpu_rows(node, NOW - 1800, NOW - 1500, **drift(NOW - 1800, NOW - 900)))
    seed.cover(NOW - 1500)
    evaluate(now=NOW - 1500)
    alert = Alert.objects.get()
    assert (alert.state, alert.firing_at) == ("pending", None)
    seed.write_gpu(seed.gpu_rows(node, NOW - 1470, NOW - 1140, **drift(NOW - 1800, NOW - 900)))
    seed.cover(NOW - 1140)
    evaluate(now=NOW - 1140)
    alert.refresh_from_db()
    assert (alert.state, alert.firing_at) == ("firing", seed.dt(NOW - 1200))
    seed.write_gpu(seed.gpu_rows(node, NOW - 1110, NOW, **drift(NOW - 1800, NOW - 900)))
    seed.cover(NOW)
    evaluate(now=NOW)
    alert.refresh_from_db()
    assert (alert.state, alert.resolved_at) == ("resolved", seed.dt(NOW - 900 + 120))
    assert alert.last_match_at == seed.dt(NOW - 900)
    assert history(alert) == ["pending", "firing", "resolved"]
    assert Alert.objects.count() == 1


def test_missing_node_inhibits_its_other_alerts(cluster: dict) -> None:
    a, b = cluster["gpu-001"], cluster["gpu-002"]
    seed.write_gpu(seed.gpu_rows(a, NOW - 900, NOW) + seed.gpu_rows(b, NOW - 900, NOW - 600))
    seed.write_ib(seed.ib_rows(a, NOW - 900, NOW) + seed.ib_rows(b, NOW - 900, NOW - 600))
    seed.xid(b, 1, NOW - 650, 79)
    seed.cover(NOW)
    evaluate(now=NOW)
    missing = Alert.objects.get(rule="node_metrics_missing")
    xid = Alert.objects.get(rule="gpu_xid")
    assert (missing.node, missing.state, missing.inhibited) == ("gpu-002", "firing", False)
    assert (xid.node, xid.state, xid.inhibited, xid.inhibited_by_id) == (
        "gpu-002",
        "firing",
        True,
        missing.pk,
    )
    assert history(xid) == ["firing", "inhibited"]


def test_a_port_that_left_active_and_came_back_is_a_link_flap_one_still_down_is_not() -> None:
    node = seed.nodes(["gpu-001"], ports=2)["gpu-001"]
    down = {"mlx5_0": (NOW - 600, NOW - 480), "mlx5_1": (NOW - 300, NOW + 1)}
    state = lambda ts, device: 1 if down[device][0] <= ts < down[device][1] else 4  # noqa: E731
    seed.write_ib(seed.ib_rows(node, NOW - 1200, NOW, state=state))
    seed.cover(NOW)
    evaluate(now=NOW + 5)
    flap = Alert.objects.get()
    assert (flap.rule, flap.state, flap.labels) == (
        "ib_link_flap",
        "firing",
        {"alertname": "ib_link_flap", "severity": "critical", "node": "gpu-001", "device": "mlx5_0",
         "port": "1", "pool": "training"},
    )  # fmt: skip
    assert (flap.pending_since, flap.firing_at) == (seed.dt(NOW - 510), seed.dt(NOW - 510))
    assert flap.context == {"flaps": [[iso(NOW - 510), "state left active and returned"]]}


def test_switch_fault_inhibits_the_port_alerts_under_that_leaf() -> None:
    made = seed.nodes(
        ["gpu-001", "gpu-002", "gpu-003"],
        leaf=lambda n, p: "leaf-1" if n != "gpu-003" else "leaf-2",
        ports=2,
    )
    for node in made.values():
        seed.write_ib(
            seed.ib_rows(
                node,
                NOW - 600,
                NOW,
                local_link_integrity=lambda ts, d: 1.0 if ts == NOW - 60 else 0.0,
            )
        )
    seed.cover(NOW)
    evaluate(now=NOW)
    switch = Alert.objects.get(rule="ib_switch_fault")
    assert (switch.labels["leaf_switch"], switch.state, switch.context["nodes"]) == (
        "leaf-1",
        "firing",
        ["gpu-001", "gpu-002"],
    )
    ports = Alert.objects.filter(rule="ib_port_errors")
    assert sorted((p.node, p.inhibited) for p in ports) == [
        ("gpu-001", True), ("gpu-001", True), ("gpu-002", True), ("gpu-002", True), ("gpu-003", False), ("gpu-003", False),
    ]  # fmt: skip
    assert {p.inhibited_by_id for p in ports if p.inhibited} == {switch.pk}


def test_silenced_alerts_are_recorded_and_unsilenced_when_the_silence_ends(
    cluster: dict, staff_user
) -> None:
    node = cluster["gpu-001"]
    seed.xid(node, 2, NOW - 120, 79)
    seed.cover(NOW)
    silence = create_silence(
        matchers=node_matchers("gpu-001"),
        comment="RMA ticket 42",
        created_by=staff_user,
        preset="4h",
    )
    evaluate(now=NOW)
    alert = Alert.objects.get()
    assert (alert.state, alert.silenced, alert.silenced_by_id) == ("firing", True, silence.pk)
    expire_silence(silence, staff_user)
    evaluate(now=NOW)
    alert.refresh_from_db()
    assert (alert.state, alert.silenced, alert.silenced_by_id) == ("firing", False, None)
    assert history(alert) == ["firing", "silenced", "unsilenced"]
    assert list(SilenceAudit.objects.order_by("ts").values_list("action", flat=True)) == [
        "created",
        "expired",
    ]


def test_until_resolved_silence_ends_when_its_alerts_resolve(cluster: dict, staff_user) -> None:
    seed.xid(cluster["gpu-001"], 2, NOW - 3500, 48)
    seed.cover(NOW)
    silence = create_silence(
        matchers=node_matchers("gpu-001"),
        comment="reboot",
        created_by=staff_user,
        preset="until_resolved",
    )
    evaluate(now=NOW)
    assert Alert.objects.get().silenced
    silence.refresh_from_db()
    assert silence.ends_at is None
    seed.cover(NOW + 200)
    evaluate(now=NOW + 200)
    silence.refresh_from_db()
    assert Alert.objects.get().state == "resolved"
    assert silence.ends_at is not None
    assert SilenceAudit.objects.filter(action="ended").count() == 1


def test_expired_silences_are_kept_five_days_then_purged(staff_user) -> None:
    seed.cover(NOW)
    from django.utils import timezone

    old = create_silence(matchers=node_matchers("a"), comment="old", created_by=staff_user,
                         starts_at=timezone.now() - timedelta(days=7), ends_at=timezone.now() - timedelta(days=6))  # fmt: skip
    recent = create_silence(matchers=node_matchers("b"), comment="recent", created_by=staff_user,
                            starts_at=timezone.now() - timedelta(days=5), ends_at=timezone.now() - timedelta(days=4))  # fmt: skip
    evaluate(now=NOW)
    assert list(Silence.objects.values_list("pk", flat=True)) == [recent.pk]
    assert SilenceAudit.objects.filter(silence_ref=old.pk, action="purged").count() == 1


def test_a_change_publishes_one_typed_live_event_after_commit(
    cluster: dict, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    published = []
    monkeypatch.setattr("core.live.publish", published.append)
    seed.xid(cluster["gpu-002"], 0, NOW - 60, 13)
    seed.cover(NOW)
    with django_capture_on_commit_callbacks(execute=True):
        evaluate(now=NOW)
    assert len(published) == 1
    event = published[0]
    assert {k: event[k] for k in ("type", "firing", "pending", "silenced", "inhibited", "changes")} == {
        "type": "alerts.changed", "firing": 1, "pending": 0, "silenced": 0, "inhibited": 0, "changes": 1,
    }  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        evaluate(now=NOW)
    assert len(published) == 1


def test_a_fault_that_returns_after_resolution_opens_a_new_alert(cluster: dict) -> None:
    node = cluster["gpu-001"]
    seed.xid(node, 2, NOW - 7200, 64)
    seed.cover(NOW - 4000)
    evaluate(now=NOW - 4000)
    seed.cover(NOW - 3000)
    evaluate(now=NOW - 3000)
    seed.xid(node, 2, NOW - 60, 48)
    seed.cover(NOW)
    evaluate(now=NOW)
    first, second = Alert.objects.order_by("pending_since")
    assert (first.state, first.resolved_at) == ("resolved", seed.dt(NOW - 7200 + 3600))
    assert (second.state, second.value, second.fingerprint) == ("firing", 48.0, first.fingerprint)
