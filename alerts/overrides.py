"""Rule settings per pool and per GPU model: which settings judge which node.

A ``RuleOverride`` gives some params of one rule for the nodes of one pool or one GPU model
(``NVIDIA H100 80GB HBM3``); a node's effective params are the rule setting's, overlaid with
its pool's override, then its GPU model's (the more specific wins). Rules stay pure: a rule
with overrides is run once per distinct effective setting ("variant"), and each run keeps the
signals of the nodes that variant judges; signals without a ``node`` (a leaf switch, a run, a
queue) are always the rule setting's. The fetch reads what every variant needs (the widest
look-back, the OR of the prefilters), so an override is judged on the same data as the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .rules import RuleConfigError, RuleSettings, validate_params
from .rules.data import Signal

log = logging.getLogger(__name__)
SCOPES = ("pool", "gpu_model")  # in the order they apply: the later wins


@dataclass(frozen=True)
class Override:
    """Params of ``rule`` for the nodes whose ``scope`` (pool or gpu_model) is ``value``."""

    rule: str
    scope: str
    value: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Variant:
    """Settings of one rule and the nodes they judge (``nodes`` None: every node nothing overrides,
    and every signal without a node)."""

    settings: RuleSettings
    nodes: frozenset[str] | None

    def keeps(self, signal: Signal, overridden: frozenset[str]) -> bool:
        """Whether this variant's run of the rule reports ``signal``."""
        node = signal.labels.get("node")
        if self.nodes is None:
            return node is None or node not in overridden
        return node in self.nodes


def parse_override(text: str) -> tuple[str, str, dict[str, Any]]:
    """``pool=training:util_min=85,tensor_max=0.1`` → (scope, value, params) for the backtest."""
    from .backtest import parse_sets

    target, sep, sets = text.partition(":")
    scope, eq, value = target.partition("=")
    if not sep or not eq or scope not in SCOPES or not value:
        raise RuleConfigError(
            "override",
            f"expected pool=<pool>:key=value,… or gpu_model=<model>:key=value,…, got {text!r}",
        )
    return scope, value, parse_sets([s for s in sets.split(",") if s])


def load(rule_settings: Mapping[str, RuleSettings]) -> list[Override]:
    """The stored overrides of enabled rules whose params still validate (others: logged, skipped)."""
    from .models import RuleOverride

    found = []
    for row in RuleOverride.objects.all():
        if row.rule not in rule_settings or not rule_settings[row.rule].enabled:
            continue
        try:
            found.append(
                Override(row.rule, row.scope, row.value, validate_params(row.rule, row.params))
            )
        except RuleConfigError as exc:
            log.warning("rule override %s is invalid (%s); ignored", row, exc)
    return found


def node_dimensions() -> dict[str, dict[str, str]]:
    """node → {"pool", "gpu_model"} as ingest knows them now."""
    from ingest.models import Node

    return {
        name: {"pool": pool, "gpu_model": gpu_model}
        for name, pool, gpu_model in Node.objects.values_list("name", "pool", "gpu_model")
    }


def variants(
    rule_settings: Mapping[str, RuleSettings],
    overrides: Iterable[Override],
    nodes: Mapping[str, Mapping[str, str]],
) -> dict[str, list[Variant]]:
    """Per rule with overrides, its variants: the rule setting first, then one per distinct
    override combination with the nodes it judges."""
    by_rule: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for o in overrides:
        by_rule.setdefault(o.rule, {})[(o.scope, o.value)] = o.params
    found: dict[str, list[Variant]] = {}
    for rule_id, table in by_rule.items():
        base = rule_settings[rule_id]
        groups: dict[tuple[tuple[str, str], ...], set[str]] = {}
        for node, dims in nodes.items():
            applied = tuple((s, dims.get(s, "")) for s in SCOPES if (s, dims.get(s, "")) in table)
            if applied:
                groups.setdefault(applied, set()).add(node)
        rule_variants = [Variant(base, None)]
        for applied, members in sorted(groups.items()):
            params = dict(base.params)
            for key in applied:
                params.update(table[key])
            rule_variants.append(Variant(base._replace(params=params), frozenset(members)))
        found[rule_id] = rule_variants
    return found


def overridden_nodes(rule_variants: list[Variant]) -> frozenset[str]:
    """Every node some override of the rule judges."""
    return frozenset(n for v in rule_variants if v.nodes is not None for n in v.nodes)


def extra_settings(found: Mapping[str, list[Variant]]) -> dict[str, list[RuleSettings]]:
    """The override settings per rule (what the fetch must also cover)."""
    return {rule: [v.settings for v in vs if v.nodes is not None] for rule, vs in found.items()}
