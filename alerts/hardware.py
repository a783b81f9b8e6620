"""A node's hardware verdict — healthy, degraded, needs reset, needs RMA — from its firing GPU alerts.

The worst verdict of the node's firing (silenced and inhibited included: a muted alert
still means the part is bad) GPU hardware alerts; docs/alerts.md "Hardware verdict"
gives the mapping and why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from .rules.gpu_health import Verdict

#: What each GPU hardware rule says about its GPU. gpu_xid counts for its hardware codes only.
RULE_VERDICTS = {
    "gpu_row_remap_failure": Verdict.NEEDS_RMA,
    "gpu_ecc_dbe": Verdict.NEEDS_RESET,
    "gpu_row_remap_pending": Verdict.NEEDS_RESET,
    "gpu_xid": Verdict.NEEDS_RESET,
    "gpu_throttle": Verdict.DEGRADED,
    "gpu_pcie_replay": Verdict.DEGRADED,
    "nvlink_errors": Verdict.DEGRADED,
}
RANK = [Verdict.HEALTHY, Verdict.DEGRADED, Verdict.NEEDS_RESET, Verdict.NEEDS_RMA]
LABELS = {
    Verdict.HEALTHY: "healthy",
    Verdict.DEGRADED: "degraded",
    Verdict.NEEDS_RESET: "needs reset",
    Verdict.NEEDS_RMA: "needs RMA",
}


class NodeVerdict(NamedTuple):
    """A node's verdict and the alerts behind it ("gpu_ecc_dbe GPU 0", ...)."""

    verdict: str
    reasons: tuple[str, ...]

    @property
    def label(self) -> str:
        """The verdict as the pages show it."""
        return LABELS[self.verdict]


def verdict_of(rules: Iterable[str]) -> str:
    """The worst verdict of these firing rules (healthy when none is a GPU hardware rule)."""
    found = [RULE_VERDICTS[rule] for rule in rules if rule in RULE_VERDICTS]
    return max(found, key=RANK.index, default=Verdict.HEALTHY)


def counts(alert: Any) -> bool:
    """Whether a firing alert speaks about hardware (gpu_xid: only its hardware codes)."""
    if alert.rule not in RULE_VERDICTS:
        return False
    return alert.rule != "gpu_xid" or (alert.context or {}).get("kind") == "hardware"


def node_verdicts(alerts: Iterable[Any]) -> dict[str, NodeVerdict]:
    """Per node with a firing hardware alert, its verdict (nodes not listed are healthy)."""
    by_node: dict[str, list[Any]] = {}
    for alert in alerts:
        if alert.node and counts(alert):
            by_node.setdefault(alert.node, []).append(alert)
    return {
        node: NodeVerdict(
            verdict_of(a.rule for a in found),
            tuple(sorted(f"{a.rule} GPU {a.labels.get('gpu', '?')}" for a in found)),
        )
        for node, found in by_node.items()
    }


def hardware_verdicts(nodes: Iterable[str] | None = None) -> dict[str, NodeVerdict]:
    """Every node's verdict from the stored firing alerts (only ``nodes`` when given)."""
    from .models import Alert, AlertState

    rows = Alert.objects.filter(state=AlertState.FIRING, rule__in=list(RULE_VERDICTS))
    if nodes is not None:
        rows = rows.filter(node__in=list(nodes))
    return node_verdicts(rows.only("rule", "node", "labels", "context"))
