"""Routing, grouping and timing decisions (pure, no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alerts.notify.grouping import (
    AlertView,
    GroupState,
    Matcher,
    Route,
    Timing,
    decide,
    group_alerts,
)

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
TIMING = Timing(timedelta(seconds=30), timedelta(minutes=5), timedelta(hours=4))


def view(
    id: int, node: str, status: str = "firing", muted: bool = False, **labels: str
) -> AlertView:  # noqa: A002
    return AlertView(
        id=id,
        fingerprint=f"fp{id}",
        status=status,  # type: ignore[arg-type]
        severity=labels.pop("severity", "critical"),
        labels={"alertname": labels.pop("alertname", "ib_port_errors"), "node": node, **labels},
        annotations={},
        starts_at=T0,
        ends_at=None,
        generator_url="",
        muted=muted,
    )


def test_default_grouping_is_by_leaf_switch_when_named_else_by_node() -> None:
    alerts = [view(i, f"gpu-{i:03d}", leaf_switch="leaf-07") for i in range(32)]
    alerts += [view(100, "gpu-100"), view(101, "gpu-101")]
    groups = group_alerts(alerts, Route(min_severity="info"))
    assert sorted(groups) == [
        '{}:{alertname="ib_port_errors", leaf_switch="leaf-07"}',
        '{}:{alertname="ib_port_errors", node="gpu-100"}',
        '{}:{alertname="ib_port_errors", node="gpu-101"}',
    ]
    assert len(groups['{}:{alertname="ib_port_errors", leaf_switch="leaf-07"}']) == 32


def test_routes_filter_by_severity_and_label_matchers() -> None:
    route = Route(
        min_severity="warning",
        matchers=(Matcher("node", "=~", "gpu-0.."), Matcher("pool", "!=", "inference")),
        group_by=("alertname",),
    )
    assert route.takes(view(1, "gpu-001", severity="warning"))
    assert not route.takes(view(2, "gpu-001", severity="info"))
    assert not route.takes(view(3, "gpu-1000"))  # regexes match the whole value
    assert not route.takes(view(4, "gpu-002", pool="inference"))


def test_a_new_group_waits_group_wait() -> None:
    state = GroupState(first_seen_at=T0)
    alerts = [view(1, "gpu-001")]
    assert decide(state, alerts, TIMING, T0 + timedelta(seconds=29)).send == []
    decision = decide(state, alerts, TIMING, T0 + timedelta(seconds=30))
    assert [a.id for a in decision.send] == [1]
    assert decision.notified == {"1": "firing"}


def test_changes_wait_group_interval_and_unchanged_groups_repeat() -> None:
    sent = T0 + timedelta(seconds=30)
    state = GroupState(T0, sent, {"1": "firing"})
    same = [view(1, "gpu-001")]
    grown = same + [view(2, "gpu-002")]
    assert decide(state, same, TIMING, sent + timedelta(minutes=10)).send == []
    assert decide(state, grown, TIMING, sent + timedelta(minutes=4)).send == []
    assert [a.id for a in decide(state, grown, TIMING, sent + timedelta(minutes=5)).send] == [1, 2]
    assert [a.id for a in decide(state, same, TIMING, sent + timedelta(hours=4)).send] == [1]


def test_a_resolution_is_sent_once_and_then_the_group_finishes() -> None:
    state = GroupState(T0, T0, {"1": "firing"})
    decision = decide(state, [view(1, "gpu-001", "resolved")], TIMING, T0 + timedelta(minutes=5))
    assert [(a.id, a.status) for a in decision.send] == [(1, "resolved")]
    assert decision.finished and decision.notified == {}


def test_resolutions_are_not_sent_when_the_channel_does_not_want_them() -> None:
    state = GroupState(T0, T0, {"1": "firing"})
    decision = decide(
        state, [view(1, "gpu-001", "resolved")], TIMING, T0 + timedelta(hours=1), False
    )
    assert decision.send == [] and decision.finished


def test_muted_alerts_are_not_sent_and_count_as_new_when_unmuted() -> None:
    state = GroupState(T0, T0, {"1": "firing", "2": "firing"})
    later = T0 + timedelta(minutes=5)
    muted = decide(state, [view(1, "gpu-001"), view(2, "gpu-002", muted=True)], TIMING, later)
    assert muted.send == [] and muted.notified == {"1": "firing", "2": "muted"}
    state = GroupState(T0, T0, muted.notified)
    back = decide(state, [view(1, "gpu-001"), view(2, "gpu-002")], TIMING, later)
    assert [a.id for a in back.send] == [1, 2]


def test_a_group_whose_alerts_resolved_before_group_wait_sends_nothing() -> None:
    state = GroupState(first_seen_at=T0)
    decision = decide(state, [view(1, "gpu-001", "resolved")], TIMING, T0 + timedelta(minutes=1))
    assert decision.send == [] and decision.finished


def test_a_notified_alert_that_resolves_while_muted_is_sent_resolved() -> None:
    state = GroupState(T0, T0, {"1": "firing"})
    muted = decide(state, [view(1, "gpu-001", muted=True)], TIMING, T0 + timedelta(minutes=1))
    assert (muted.send, muted.notified, muted.finished) == ([], {"1": "muted"}, False)
    state = GroupState(T0, T0, muted.notified)
    resolved = [view(1, "gpu-001", "resolved", muted=True)]
    assert decide(state, resolved, TIMING, T0 + timedelta(minutes=4)).notified == {"1": "muted"}
    decision = decide(state, resolved, TIMING, T0 + timedelta(minutes=5))
    assert [(a.id, a.status) for a in decision.send] == [(1, "resolved")]
    assert decision.finished and decision.notified == {}


def test_an_alert_muted_before_it_was_notified_is_never_sent_resolved() -> None:
    state = GroupState(T0, T0, {"1": "firing"})
    alerts = [view(1, "gpu-001"), view(2, "gpu-002", muted=True)]
    assert decide(state, alerts, TIMING, T0 + timedelta(minutes=5)).notified == {"1": "firing"}
    alerts = [view(1, "gpu-001"), view(2, "gpu-002", "resolved", muted=True)]
    decision = decide(state, alerts, TIMING, T0 + timedelta(hours=4))
    assert [(a.id, a.status) for a in decision.send] == [(1, "firing")]
    assert decision.notified == {"1": "firing"}


def test_muted_alerts_owe_nothing_when_the_channel_does_not_want_resolutions() -> None:
    state = GroupState(T0, T0, {"1": "firing"})
    decision = decide(
        state, [view(1, "gpu-001", muted=True)], TIMING, T0 + timedelta(hours=1), False
    )
    assert decision.send == [] and decision.finished and decision.notified == {}
