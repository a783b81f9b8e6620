"""The pure lifecycle: streaks, episodes, keep_firing_for and the decision per fingerprint."""

from __future__ import annotations

import math

import pytest

from alerts.lifecycle import Decision, Tracked, decide, episodes, finding_for
from alerts.rules import RuleConfigError, settings_for, validate_config
from alerts.rules.data import Detail, Signal

T = 1_000_000.0


def signal(truth: list[bool], step: float = 30.0, hold: float = 90.0) -> Signal:
    times = [T + step * i for i in range(len(truth))]
    return Signal({"node": "n1"}, times, truth, hold, lambda i: Detail(float(i), f"point {i}", {}))


def test_episodes_fire_after_for_and_resolve_keep_firing_for_after_the_end() -> None:
    s = signal([False] + [True] * 12 + [False] * 20)  # true from T+30 to T+360, false from T+390
    assert episodes(s, T + 990, for_seconds=300, keep_seconds=120) == [
        (T + 30, T + 330, T + 390, T + 510, 12)
    ]


def test_a_dip_shorter_than_keep_firing_for_does_not_resolve() -> None:
    s = signal([True] * 12 + [False] * 2 + [True] * 4)
    (episode,) = episodes(s, T + 510, for_seconds=300, keep_seconds=120)
    assert (episode.since, episode.resolved_at) == (T, None)
    assert len(episodes(s, T + 510, for_seconds=300, keep_seconds=30)) == 1
    assert episodes(s, T + 510, for_seconds=300, keep_seconds=30)[0].resolved_at == T + 360 + 30


def test_pending_alert_that_stops_before_for_becomes_inactive() -> None:
    tracked = Tracked("pending", T, None, T + 120)
    finding = finding_for("r", signal([True] * 5 + [False] * 3), T + 210, 300, 0)
    assert decide(tracked, finding, T + 210, 0) == Decision(
        "inactive", T + 150, None, False, T + 150
    )


def test_firing_alert_is_kept_for_keep_firing_for_then_resolved() -> None:
    tracked = Tracked("firing", T, T + 300, T + 600)
    assert decide(tracked, None, T + 650, 120) == Decision(None, None, "firing", False, T + 600)
    assert decide(tracked, None, T + 720, 120) == Decision(
        "resolved", T + 720, None, False, T + 600
    )


def test_a_new_episode_after_resolution_opens_a_new_alert() -> None:
    tracked = Tracked("firing", T, T + 300, T + 600)
    finding = finding_for("r", signal([False] * 40 + [True] * 12), T + 1530, 300, 0)
    decision = decide(tracked, finding, T + 1530, 0)
    assert (decision.close_as, decision.closed_at, decision.target, decision.reopen) == (
        "resolved", T + 600, "firing", True,
    )  # fmt: skip


def test_synthesized_intervals_hold_until_contradicted() -> None:
    s = Signal({"node": "n1"}, [T], [True], math.inf, lambda i: Detail(None, "", {}))
    finding = finding_for("r", s, T + 5000, 0, 0)
    assert (finding.state, finding.since, finding.until) == ("firing", T, T + 5000)


def test_rule_settings_are_validated_with_clear_errors() -> None:
    with pytest.raises(RuleConfigError, match="unknown rule 'gpu_drift'"):
        validate_config("gpu_drift", {})
    with pytest.raises(RuleConfigError, match=r"params.util_min: expected a number, got 'high'"):
        validate_config("gpu_tensor_drift", {"util_min": "high"})
    with pytest.raises(
        RuleConfigError, match=r"params.utilmin: unknown parameter of gpu_tensor_drift"
    ):
        validate_config("gpu_tensor_drift", {"utilmin": 90})
    with pytest.raises(RuleConfigError, match="params.require_run: expected true or false"):
        validate_config("gpu_tensor_drift", {"require_run": 1})
    with pytest.raises(RuleConfigError, match="for_seconds: expected a number of seconds"):
        settings_for("gpu_tensor_drift", for_seconds=-5)
    assert settings_for("gpu_tensor_drift", params={"util_min": 80}).params["util_min"] == 80.0
