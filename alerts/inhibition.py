"""Inhibition as a pure function: firing source alerts mute target alerts that share labels.

Like Alertmanager's inhibit rules: a firing ``node_metrics_missing`` mutes that
node's other alerts (its silence explains them); a firing ``ib_switch_fault``
mutes the port alerts under that leaf switch (one switch, one alert).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

IB_PORT_RULES = frozenset(
    {"ib_port_errors", "ib_link_flap", "ib_congestion", "ib_counter_saturated"}
)


@dataclass(frozen=True)
class InhibitRule:
    """A firing ``source`` alert mutes alerts of ``targets`` (None: any other rule) with equal ``equal`` labels."""

    source: str
    targets: frozenset[str] | None
    equal: tuple[str, ...]


INHIBIT_RULES = (
    InhibitRule("node_metrics_missing", None, ("node",)),
    InhibitRule("ib_switch_fault", IB_PORT_RULES, ("leaf_switch",)),
)


class AlertLike(Protocol):
    """What inhibition reads of an alert."""

    pk: Any
    rule: str
    state: str
    labels: Mapping[str, str]


def inhibitions(
    alerts: Iterable[AlertLike], rules: Iterable[InhibitRule] = INHIBIT_RULES
) -> dict[Any, Any]:
    """Map each inhibited alert's pk to the pk of the firing alert that inhibits it."""
    alerts = list(alerts)
    muted: dict[Any, Any] = {}
    for rule in rules:
        sources: dict[tuple[str, ...], Any] = {}
        for alert in alerts:
            if alert.rule == rule.source and alert.state == "firing":
                key = tuple(str(alert.labels.get(name, "")) for name in rule.equal)
                if all(key):
                    sources.setdefault(key, alert.pk)
        if not sources:
            continue
        for alert in alerts:
            if alert.rule == rule.source or alert.pk in muted:
                continue
            if rule.targets is not None and alert.rule not in rule.targets:
                continue
            key = tuple(str(alert.labels.get(name, "")) for name in rule.equal)
            if key in sources:
                muted[alert.pk] = sources[key]
    return muted
