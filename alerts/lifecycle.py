"""Alert lifecycle as pure functions: signals → streaks → episodes → the state an alert should be in.

Everything here runs on data time (unix seconds) and is deterministic: the
same stored series give the same alerts whether evaluated live, after a
restart, or in a backtest. A condition that held for its whole ``for`` window
in the data fires at the first evaluation that sees it.
"""

from __future__ import annotations

from typing import NamedTuple

from .rules.data import Detail, Signal
from .states import ACTIVE_STATES, AlertState


class Streak(NamedTuple):
    """A run of true points: the condition held from ``since`` until ``until``."""

    since: float
    until: float
    current: bool  # still holding at as_of
    last_index: int  # index of its last true point (for the signal's describe())


class Episode(NamedTuple):
    """One firing of an alert in the data: pending since, fired at, resolved at (None: firing)."""

    since: float
    fired_at: float
    until: float  # the last time the condition held
    resolved_at: float | None
    last_index: int


def streaks(signal: Signal, as_of: float) -> list[Streak]:
    """The runs of true points of a signal; a point stays true ``hold`` seconds unless contradicted."""
    times, truth, hold = signal.times, signal.truth, signal.hold
    found: list[Streak] = []
    n = len(times)
    i = 0
    while i < n:
        if not truth[i]:
            i += 1
            continue
        start = i
        while i + 1 < n and truth[i + 1] and times[i + 1] - times[i] <= hold:
            i += 1
        nxt = times[i + 1] if i + 1 < n else None
        end = times[i] + hold
        current = nxt is None and as_of <= end
        until = as_of if current else min(end, nxt if nxt is not None else as_of, as_of)
        found.append(Streak(times[start], max(until, times[i]), current, i))
        i += 1
    return found


def episodes(
    signal: Signal, as_of: float, for_seconds: float, keep_seconds: float
) -> list[Episode]:
    """The firings a signal produces under ``for`` and ``keep_firing_for`` (Prometheus semantics)."""
    done: list[Episode] = []
    firing: Episode | None = None
    for streak in streaks(signal, as_of):
        if firing is not None and streak.since - firing.until <= keep_seconds:
            firing = firing._replace(until=streak.until, last_index=streak.last_index)
            continue
        if firing is not None:
            done.append(firing._replace(resolved_at=firing.until + keep_seconds))
            firing = None
        held = streak.until - streak.since
        if held >= for_seconds:
            firing = Episode(
                streak.since, streak.since + for_seconds, streak.until, None, streak.last_index
            )
    if firing is not None:
        still = firing.until >= as_of or as_of - firing.until < keep_seconds
        done.append(firing if still else firing._replace(resolved_at=firing.until + keep_seconds))
    return done


class Finding(NamedTuple):
    """What the data says about one fingerprint now: firing, pending, or neither (with the last end)."""

    rule: str
    labels: dict[str, str]
    extra: dict[str, str]
    state: str  # "firing", "pending" or "inactive"
    since: float
    fired_at: float | None
    until: float
    resolved_at: float | None
    detail: Detail


def finding_for(
    rule: str, signal: Signal, as_of: float, for_seconds: float, keep_seconds: float
) -> Finding | None:
    """Reduce a signal to its finding; None when the condition never held in the window."""
    if True not in signal.truth:
        return None
    last_episode = next(iter(reversed(episodes(signal, as_of, for_seconds, keep_seconds))), None)
    last_streak = streaks(signal, as_of)[-1]
    if last_episode is not None and last_episode.resolved_at is None:
        return Finding(
            rule,
            signal.labels,
            signal.extra,
            AlertState.FIRING,
            last_episode.since,
            last_episode.fired_at,
            last_episode.until,
            None,
            signal.describe(last_episode.last_index),
        )
    if last_streak.current:
        return Finding(
            rule,
            signal.labels,
            signal.extra,
            AlertState.PENDING,
            last_streak.since,
            None,
            last_streak.until,
            None,
            signal.describe(last_streak.last_index),
        )
    if last_episode is not None and last_episode.since >= last_streak.since:
        return Finding(
            rule,
            signal.labels,
            signal.extra,
            AlertState.INACTIVE,
            last_episode.since,
            last_episode.fired_at,
            last_episode.until,
            last_episode.resolved_at,
            signal.describe(last_episode.last_index),
        )
    return Finding(
        rule,
        signal.labels,
        signal.extra,
        AlertState.INACTIVE,
        last_streak.since,
        None,
        last_streak.until,
        None,
        signal.describe(last_streak.last_index),
    )


class Tracked(NamedTuple):
    """The stored state of an active alert that the decision needs."""

    state: str
    pending_since: float
    firing_at: float | None
    last_match_at: float


class Decision(NamedTuple):
    """What to do with one fingerprint: close the stored alert and/or open or update one."""

    close_as: str | None  # "resolved" or "inactive" for the stored alert, else None
    closed_at: float | None
    target: str | None  # "pending" or "firing" for the (possibly new) active alert, else None
    reopen: bool  # the target is a new episode (a new Alert row)
    last_match_at: float | None


NOTHING = Decision(None, None, None, False, None)


def decide(
    tracked: Tracked | None, finding: Finding | None, as_of: float, keep_seconds: float
) -> Decision:
    """The transition of one fingerprint, given its stored alert (if any) and the data's finding."""
    if finding is not None and finding.state in ACTIVE_STATES:
        if tracked is None:
            return Decision(None, None, finding.state, True, finding.until)
        same_episode = finding.since <= tracked.last_match_at + keep_seconds
        if tracked.state == AlertState.FIRING and same_episode:
            return Decision(
                None, None, AlertState.FIRING, False, max(finding.until, tracked.last_match_at)
            )
        if tracked.state == AlertState.PENDING and finding.since <= tracked.last_match_at:
            return Decision(None, None, finding.state, False, finding.until)
        close_as = (
            AlertState.RESOLVED if tracked.state == AlertState.FIRING else AlertState.INACTIVE
        )
        closed_at = tracked.last_match_at + (
            keep_seconds if close_as == AlertState.RESOLVED else 0.0
        )
        return Decision(close_as, min(closed_at, as_of), finding.state, True, finding.until)
    if tracked is None:
        return NOTHING
    last_match = max(
        tracked.last_match_at, finding.until if finding is not None else tracked.last_match_at
    )
    if tracked.state == AlertState.PENDING:
        return Decision(AlertState.INACTIVE, last_match, None, False, last_match)
    if as_of - last_match < keep_seconds:
        return Decision(None, None, AlertState.FIRING, False, last_match)
    resolved = (
        finding.resolved_at
        if finding is not None and finding.resolved_at
        else last_match + keep_seconds
    )
    return Decision(AlertState.RESOLVED, min(resolved, as_of), None, False, last_match)
