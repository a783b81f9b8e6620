"""Routing, grouping and timing of notifications: pure functions, no ORM.

The semantics are Alertmanager's. A channel takes the alerts that reach its
minimum severity and match its label matchers. They are grouped by the
channel's ``group_by`` labels; a group is first notified ``group_wait`` after
it appears, then again at most every ``group_interval`` when its alerts change
(a new alert fires, a notified alert resolves), and every ``repeat_interval``
while anything still fires.

The default grouping (an empty ``group_by``) is ``alertname`` plus
``leaf_switch`` when the alert names one (GPU alerts, which carry their node's leaf as
attribution, excepted), else ``alertname`` plus ``node``: a leaf-switch fault that hits
32 nodes is one notification naming the switch and the nodes, while unrelated per-GPU
faults stay separate.

An acknowledged alert (``AlertView.acked``) is not repeated at ``repeat_interval``; it
still resolves. A channel told of acknowledgements (``tell_acks``) gets the group again
when one of its alerts is acknowledged or the acknowledgement lapses.

Silenced and inhibited ("muted") alerts are never notified as firing. A
firing alert that was notified and is then muted stays recorded as ``muted``:
receivers still hold it as firing, so when it resolves (muted or not) its
resolution is sent; when the silence ends while it still fires it counts as new
and is sent. An alert muted before it was ever notified is never notified,
neither firing nor resolved. (Alertmanager channels differ: they are sent every
firing alert, muted or not; see ``forwarding``.)

Group keys are Alertmanager's: ``{}:{alertname="x", node="y"}``, values quoted
like Go's ``%q`` (what Alertmanager 0.25 sends as ``groupKey``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from ..matchers import MATCH_OPS, Matcher
from ..severity import rank

__all__ = ["MATCH_OPS", "Matcher"]  # re-exported: channels route with the silences' matchers

ALL_LABELS = "..."  # group_by = ["..."]: every label, i.e. one group per alert
ROOT_ROUTE_KEY = "{}"  # Alertmanager's key of a route without matchers
WATCHDOG = "watchdog"  # the dead man's switch's alertname (alerts.watchdog)


@dataclass(frozen=True)
class AlertView:
    """What the notifier needs to know about one alert."""

    id: int
    fingerprint: str
    status: Literal["firing", "resolved"]
    severity: str
    labels: Mapping[str, str]  # includes ``alertname`` and ``severity``
    annotations: Mapping[str, str]
    starts_at: datetime
    ends_at: datetime | None
    generator_url: str
    muted: bool = False
    inhibited_by: str = ""  # the inhibiting alert's alertname, when inhibited
    acked: bool = False  # acknowledged (and not lapsed): no repeat notifications


@dataclass(frozen=True)
class Route:
    """Which alerts a channel takes, and how it groups them."""

    min_severity: str = "info"
    matchers: tuple[Matcher, ...] = ()
    group_by: tuple[str, ...] = ()
    watchdog: bool = False  # takes the always-firing watchdog (alerts.watchdog), whatever else

    def takes(self, alert: AlertView) -> bool:
        """Whether the alert reaches this channel."""
        if alert.labels.get("alertname") == WATCHDOG:
            return self.watchdog
        if rank(alert.severity) < rank(self.min_severity):
            return False
        return all(matcher.matches(alert.labels) for matcher in self.matchers)


@dataclass(frozen=True)
class Timing:
    """Alertmanager's three intervals."""

    group_wait: timedelta = timedelta(seconds=30)
    group_interval: timedelta = timedelta(minutes=5)
    repeat_interval: timedelta = timedelta(hours=4)


# The statuses a group records per notified alert; ``acked``: notified as acknowledged
# (channels that are told of acknowledgements only).
FIRING, MUTED, ACKED = "firing", "muted", "acked"


@dataclass
class GroupState:
    """What a group has notified so far: alert id (as text) → ``firing`` or ``muted``.

    ``muted``: notified as firing, muted since, so owed a resolution. ``acked``: notified as
    firing and acknowledged (to a channel told of acknowledgements).
    """

    first_seen_at: datetime
    last_sent_at: datetime | None = None
    notified: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """The outcome of one flush of one group."""

    send: list[AlertView]  # empty: nothing to send now
    notified: dict[str, str]  # the group's notified state after this flush
    finished: bool  # nothing fires and nothing is owed: the group can be forgotten


def group_labels(alert: AlertView, group_by: Sequence[str]) -> dict[str, str]:
    """The labels that name an alert's group."""
    if ALL_LABELS in group_by:
        return dict(alert.labels)
    names = list(group_by)
    if not names:
        names = ["alertname", "leaf_switch" if _by_leaf(alert.labels) else "node"]
    return {name: alert.labels[name] for name in names if alert.labels.get(name)}


def _by_leaf(labels: Mapping[str, str]) -> bool:
    # A GPU alert carries its node's leaf switch as attribution only: it stays grouped by node.
    return bool(labels.get("leaf_switch")) and "gpu" not in labels


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
_GO_ESCAPES |= {"\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}


def quote_label_value(value: str) -> str:
    """``value`` double-quoted as Go's ``%q`` does (Alertmanager prints label sets with it).

    Backslash, double quote and the C control escapes are escaped, other
    non-printable characters become ``\\xNN`` / ``\\uNNNN``; printable
    unicode stays as it is. (Checked against Alertmanager 0.25's groupKey.)
    """
    out = []
    for char in value:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def label_set_text(labels: Mapping[str, str]) -> str:
    """A label set as Prometheus prints one: ``{a="x", b="y"}``, names sorted."""
    pairs = ", ".join(
        f"{name}={quote_label_value(value)}" for name, value in sorted(labels.items())
    )
    return "{" + pairs + "}"


def group_key(labels: Mapping[str, str]) -> str:
    """A group's key in Alertmanager's format: the (root) route's key ``{}``, ``:``, the labels.

    Distinct label sets always give distinct keys (values are escaped, never swapped).
    """
    return ROOT_ROUTE_KEY + ":" + label_set_text(labels)


def group_alerts(alerts: Iterable[AlertView], route: Route) -> dict[str, list[AlertView]]:
    """The alerts a route takes, by group key, each group ordered by alert id."""
    groups: dict[str, list[AlertView]] = {}
    for alert in sorted(alerts, key=lambda a: a.id):
        if route.takes(alert):
            groups.setdefault(group_key(group_labels(alert, route.group_by)), []).append(alert)
    return groups


def _due(
    state: GroupState, changed: bool, firing: list[AlertView], timing: Timing, now: datetime
) -> bool:
    if state.last_sent_at is None:
        return bool(firing) and now >= state.first_seen_at + timing.group_wait
    if changed and now >= state.last_sent_at + timing.group_interval:
        return True
    # Acknowledged alerts are not repeated: someone is on them.
    repeating = any(not a.acked for a in firing)
    return repeating and now >= state.last_sent_at + timing.repeat_interval


def _owes_resolution(alert: AlertView, state: GroupState, send_resolved: bool) -> bool:
    # Receivers hold a notified alert as firing until told otherwise, even one muted since.
    notified = state.notified.get(str(alert.id))
    if send_resolved:
        return notified in (FIRING, MUTED, ACKED)
    return notified in (FIRING, ACKED) and not alert.muted


def _notified_as(alert: AlertView, tell_acks: bool) -> str:
    return ACKED if tell_acks and alert.acked else FIRING


def decide(
    state: GroupState,
    alerts: Sequence[AlertView],
    timing: Timing,
    now: datetime,
    send_resolved: bool = True,
    tell_acks: bool = False,
) -> Decision:
    """Whether to notify a group now, and which alerts to put in the notification.

    Acknowledged firing alerts are not repeated; ``tell_acks``: an acknowledgement (or its
    lapse) is a change of the group, notified like a new alert.
    """
    firing = [a for a in alerts if a.status == "firing" and not a.muted]
    resolved = [
        a for a in alerts if a.status == "resolved" and _owes_resolution(a, state, send_resolved)
    ]
    muted = {
        str(a.id): MUTED
        for a in alerts
        if a.status == "firing" and a.muted and _owes_resolution(a, state, send_resolved)
    }
    if not firing and not resolved:
        return Decision([], muted, not muted)
    changed = bool(resolved) or any(
        state.notified.get(str(a.id)) != _notified_as(a, tell_acks) for a in firing
    )
    if not _due(state, changed, firing, timing, now):
        # Keep what was notified for alerts still firing or still owed a resolution.
        owed = {str(a.id) for a in [*firing, *resolved]}
        return Decision([], {k: v for k, v in state.notified.items() if k in owed} | muted, False)
    if not firing and not send_resolved:
        return Decision([], {}, True)
    notified = muted | {str(a.id): _notified_as(a, tell_acks) for a in firing}
    return Decision(firing + (resolved if send_resolved else []), notified, not notified)
