"""Backtest: replay one rule with given settings over stored history, without touching alert state.

Uses the same fetch, rule and lifecycle code as live evaluation, so what it
reports is what the engine would have fired: how many alerts, when, and where.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from . import inputs
from . import overrides as overrides_
from .lifecycle import episodes
from .models import RuleConfig
from .rules import REGISTRY, RuleConfigError, RuleSettings, get_rule, validate_params
from .rules.series import duration, iso
from .services import load_rule_settings, settings_from_config

NOT_BACKTESTABLE = {
    "ib_switch_fault": "derived from other rules' current findings",
    "ingest_stale": "judges the ingest cursors now, which keep no history",
}
_SPAN = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
TOP_LEVEL = ("severity", "for_seconds", "keep_firing_for_seconds")


def parse_span(text: str) -> float:
    """``90s``, ``30m``, ``12h``, ``7d`` → seconds; RuleConfigError otherwise."""
    match = _SPAN.match(text.strip())
    if not match:
        raise RuleConfigError("since", f"expected a duration like 30m, 12h or 7d, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """``["util_min=80", "for_seconds=300"]`` → values parsed as JSON when they are JSON, else strings."""
    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise RuleConfigError("set", f"expected key=value, got {pair!r}")
        try:
            parsed[key.strip()] = json.loads(raw)
        except ValueError:
            parsed[key.strip()] = raw
    return parsed


def with_overrides(base: RuleSettings, overrides: dict[str, Any]) -> RuleSettings:
    """Settings with ``overrides`` applied (top-level fields or params), validated."""
    from .rules import settings_for

    top = {k: v for k, v in overrides.items() if k in TOP_LEVEL}
    params = {k: v for k, v in overrides.items() if k not in TOP_LEVEL}
    merged = {
        "severity": top.get("severity", base.severity),
        "for_seconds": top.get("for_seconds", base.for_seconds),
        "keep_firing_for_seconds": top.get("keep_firing_for_seconds", base.keep_firing_for_seconds),
    }
    return settings_for(base.rule, params={**base.params, **params}, **merged)


@dataclass
class Fired:
    """One alert the rule would have fired."""

    labels: dict[str, str]
    since: float
    fired_at: float
    resolved_at: float | None
    summary: str


@dataclass
class BacktestReport:
    """The outcome of a backtest."""

    rule: str
    settings: RuleSettings
    start: float
    end: float
    fired: list[Fired] = field(default_factory=list)
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """A human report, one alert per line."""
        head = (
            f"{self.rule} from {iso(self.start)} to {iso(self.end)}: {len(self.fired)} alert(s) would have fired "
            f"(for={duration(self.settings.for_seconds)}, keep_firing_for={duration(self.settings.keep_firing_for_seconds)}, "
            f"params={json.dumps(self.settings.params, sort_keys=True)})"
        )
        rows = [
            f"  {iso(f.fired_at)} → {iso(f.resolved_at) if f.resolved_at else 'still firing'}  "
            + " ".join(f"{k}={v}" for k, v in sorted(f.labels.items()))
            + f"  {f.summary}"
            for f in self.fired
        ]
        return [head, *rows]


def backtest(rule_id: str, since_seconds: float, overrides: dict[str, Any] | None = None,
             now: float | None = None,
             scoped: list[tuple[str, str, dict[str, Any]]] | None = None) -> BacktestReport:  # fmt: skip
    """Replay ``rule_id`` with its stored settings plus ``overrides`` over the last ``since_seconds``.

    Per-pool / per-GPU-model overrides apply as in live evaluation: the stored ones, and
    ``scoped`` ``(scope, value, params)`` over them (validated like the rule's params).
    """
    rule = get_rule(rule_id)
    if rule_id in NOT_BACKTESTABLE:
        raise RuleConfigError(
            "rule", f"{rule_id} cannot be backtested: {NOT_BACKTESTABLE[rule_id]}"
        )
    stored = RuleConfig.objects.filter(rule=rule_id).first()
    base = settings_from_config(stored) if stored else rule.defaults()
    rs = with_overrides(base, overrides or {})._replace(enabled=True)
    everything = {
        rid: s._replace(enabled=rid == rule_id) for rid, s in load_rule_settings().items()
    }
    everything[rule_id] = rs
    runs = _variants(rule_id, everything, scoped or [])
    started = time.perf_counter()
    batched = "gpu" in rule.needs  # its candidates' whole series, a batch of GPUs at a time
    data = inputs.fetch(everything, now=now, span=since_seconds,
                        extra=overrides_.extra_settings({rule_id: runs}),
                        gpu_keys_only=batched)  # fmt: skip
    as_of = rule.as_of(data)
    report = BacktestReport(rule_id, rs, as_of - since_seconds, as_of)
    overridden = overrides_.overridden_nodes(runs)
    batches = (
        inputs.gpu_batches(data, settings.ALERTS_BACKTEST_BATCH_POINTS) if batched else [data.gpu]
    )
    for batch in batches:
        data.gpu = batch
        for variant in runs:
            vs = variant.settings
            for signal in rule.signals(data, vs):
                if not variant.keeps(signal, overridden):
                    continue
                for ep in episodes(signal, as_of, vs.for_seconds, vs.keep_firing_for_seconds):
                    if ep.fired_at >= report.start:
                        summary = signal.describe(ep.last_index).summary
                        report.fired.append(
                            Fired(signal.labels, ep.since, ep.fired_at, ep.resolved_at, summary)
                        )
    report.fired.sort(key=lambda f: (f.fired_at, sorted(f.labels.items())))
    report.seconds = time.perf_counter() - started
    return report


def _variants(rule_id: str, everything: dict[str, RuleSettings],
              scoped: list[tuple[str, str, dict[str, Any]]]) -> list[overrides_.Variant]:  # fmt: skip
    """The rule's variants: stored overrides, with ``scoped`` ones (validated) over them."""
    table = {(o.scope, o.value): o for o in overrides_.load(everything) if o.rule == rule_id}
    for scope, value, params in scoped:
        if scope not in overrides_.SCOPES:
            raise RuleConfigError("override", f"scope must be pool or gpu_model, got {scope!r}")
        table[(scope, value)] = overrides_.Override(
            rule_id, scope, value, validate_params(rule_id, params)
        )
    if not table:
        return [overrides_.Variant(everything[rule_id], None)]
    found = overrides_.variants(everything, table.values(), overrides_.node_dimensions())
    return found[rule_id]


__all__ = ["REGISTRY", "BacktestReport", "backtest", "parse_sets", "parse_span"]
