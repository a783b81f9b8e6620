"""Alertmanager channels (pure): every firing alert re-sent, muted or not; group keys."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from alerts.notify.forwarding import decide_forwarding
from alerts.notify.grouping import AlertView, GroupState, group_key, quote_label_value

T0 = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)
RESEND = timedelta(seconds=60)


def view(id: int, status: str = "firing", **extra: object) -> AlertView:  # noqa: A002
    return AlertView(
        id=id,
        fingerprint=f"fp{id}",
        status=status,  # type: ignore[arg-type]
        severity="critical",
        labels={"alertname": "ib_port_errors", "node": f"gpu-{id:03d}"},
        annotations={},
        starts_at=T0,
        ends_at=T0 + timedelta(minutes=9) if status == "resolved" else None,
        generator_url="",
        **extra,  # type: ignore[arg-type]
    )


def sent(decision_send: list[AlertView]) -> list[tuple[int, str, str]]:
    return [(a.id, a.status, a.labels.get("inhibited_by", "")) for a in decision_send]


def test_a_new_alert_is_forwarded_at_once_and_then_every_resend_interval() -> None:
    first = decide_forwarding(GroupState(T0), [view(1)], RESEND, T0)
    assert sent(first.send) == [(1, "firing", "")] and first.notified == {"1": "firing"}
    state = GroupState(T0, T0, first.notified)
    assert decide_forwarding(state, [view(1)], RESEND, T0 + timedelta(seconds=59)).send == []
    again = decide_forwarding(state, [view(1)], RESEND, T0 + RESEND)
    assert sent(again.send) == [(1, "firing", "")]


def test_silenced_and_inhibited_alerts_keep_being_forwarded() -> None:
    state = GroupState(T0, T0, {"1": "firing", "2": "firing"})
    alerts = [view(1, muted=True), view(2, muted=True, inhibited_by="node_metrics_missing")]
    decision = decide_forwarding(state, alerts, RESEND, T0 + timedelta(seconds=1))
    # Inhibition changed alert 2's labels: its old label set is ended in the same request.
    assert sent(decision.send) == [
        (1, "firing", ""),
        (2, "firing", "node_metrics_missing"),
        (2, "resolved", ""),
    ]
    assert decision.send[2].ends_at == T0 + timedelta(seconds=1)
    assert decision.notified == {"1": "firing", "2": "inhibited_by=node_metrics_missing"}
    state = GroupState(T0, T0 + timedelta(seconds=1), decision.notified)
    later = decide_forwarding(state, alerts, RESEND, T0 + timedelta(seconds=61))
    assert sent(later.send) == [(1, "firing", ""), (2, "firing", "node_metrics_missing")]


def test_a_resolution_is_forwarded_under_the_labels_last_sent() -> None:
    state = GroupState(T0, T0, {"1": "inhibited_by=node_metrics_missing"})
    decision = decide_forwarding(
        state, [view(1, "resolved", muted=True)], RESEND, T0 + timedelta(seconds=5)
    )
    assert sent(decision.send) == [(1, "resolved", "node_metrics_missing")]
    assert decision.send[0].ends_at == T0 + timedelta(minutes=9)
    assert decision.finished and decision.notified == {}


def test_an_alert_resolved_before_it_was_forwarded_sends_nothing() -> None:
    decision = decide_forwarding(GroupState(T0), [view(1, "resolved")], RESEND, T0)
    assert (decision.send, decision.finished) == ([], True)


def test_group_keys_escape_values_like_alertmanager() -> None:
    assert group_key({"pod": "it's"}) != group_key({"pod": 'it"s'})
    assert group_key({"pod": "it's", "alertname": "x"}) == '{}:{alertname="x", pod="it\'s"}'
    assert group_key({"pod": 'it"s'}) == '{}:{pod="it\\"s"}'
    assert quote_label_value('a\\b"c\nd\te é ✓ \x00 \u200b') == (
        '"a\\\\b\\"c\\nd\\te é ✓ \\x00 \\u200b"'
    )
    assert group_key({}) == "{}:{}"


def test_forwarded_views_are_not_muted() -> None:
    decision = decide_forwarding(GroupState(T0), [replace(view(1), muted=True)], RESEND, T0)
    assert [a.muted for a in decision.send] == [False]


def test_the_migration_rekeys_groups_exactly_like_group_key() -> None:
    import importlib

    migration = importlib.import_module(
        "alerts.migrations.0004_notification_channels_pagerduty_email_silence_mirror"
    )
    for value in ["leaf-07", "it's", 'it"s', "a\\b\nc\td é ✓ \x00 \u200b \U0001f600"]:
        assert migration._go_quote(value) == quote_label_value(value)
