"""When a new alert's condition really began: walk back past the look-back that cut it off.

An evaluation reads only its rules' look-back (``for`` + ``keep_firing_for`` +
windows). A condition that already held at the first point of that window — after
a restart, an outage catch-up, a first install over backfilled history — would
otherwise get the window's start as its start. For those findings only, and only
when they open a new alert, the rule is re-run over wider windows (the same fetch
and lifecycle code a backtest uses, so the answer is the backtest's) until the
condition's start lies inside the data or ``ALERTS_SINCE_MAX_WALKBACK_SECONDS``
is reached. Spans grow ×4 from ``ALERTS_SINCE_FIRST_WALKBACK_SECONDS``: a fault
hours old costs a few extra reads once, at the evaluation that opens its alert.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from . import inputs
from .lifecycle import Finding, finding_for
from .rules import REGISTRY, RuleSettings
from .rules.data import EvaluationData

Fingerprinter = Callable[[str, dict[str, str]], str]


def horizon(rule: Any, rs: RuleSettings, data: EvaluationData) -> float | None:
    """The latest start a finding of ``rule`` can have and still have been cut off by the window.

    The window's start, plus the rule's largest ``*window_seconds`` param (a windowed
    condition is first true that much later) and one sample gap; None when the rule
    reads no windowed dataset (its history is not cut by the look-back).
    """
    starts = [data.window_starts[d] for d in rule.needs if d in data.window_starts]
    if not starts:
        return None
    windows = [float(v) for k, v in rs.params.items() if k.endswith("window_seconds")]
    return max(starts) + max(windows, default=0.0) + data.max_gap


def cut_off(
    findings: dict[str, Finding],
    known: set[str],
    rule_settings: dict[str, RuleSettings],
    data: EvaluationData,
) -> dict[str, dict[str, Finding]]:
    """rule → {fingerprint: finding} of the new active findings that start at their window's edge."""
    found: dict[str, dict[str, Finding]] = {}
    limits: dict[str, float | None] = {}
    for fp, finding in findings.items():
        if fp in known or finding.state not in ("firing", "pending"):
            continue
        rule_id = finding.rule
        if rule_id not in limits:
            limits[rule_id] = horizon(REGISTRY[rule_id], rule_settings[rule_id], data)
        limit = limits[rule_id]
        if limit is not None and finding.since <= limit:
            found.setdefault(rule_id, {})[fp] = finding
    return found


def walk_back(
    findings: dict[str, Finding],
    known: set[str],
    rule_settings: dict[str, RuleSettings],
    data: EvaluationData,
    fingerprint: Fingerprinter,
    previous: dict[str, float] | None = None,
) -> int:
    """Move the ``since`` (and detail) of cut-off new findings to where the condition began.

    ``known``: fingerprints of the stored active alerts (they keep their start).
    Returns how many findings moved. ``fired_at`` and the state stay as the
    narrow window judged them: the alert fires now, as before.
    """
    moved = 0
    for rule_id, open_ones in cut_off(findings, known, rule_settings, data).items():
        moved += _walk_rule(
            rule_id, open_ones, findings, rule_settings, data, fingerprint, previous
        )
    return moved


def _walk_rule(
    rule_id: str,
    open_ones: dict[str, Finding],
    findings: dict[str, Finding],
    rule_settings: dict[str, RuleSettings],
    data: EvaluationData,
    fingerprint: Fingerprinter,
    previous: dict[str, float] | None,
) -> int:
    rule, rs = REGISTRY[rule_id], rule_settings[rule_id]
    only = {rid: s._replace(enabled=rid == rule_id) for rid, s in rule_settings.items()}
    span = float(settings.ALERTS_SINCE_FIRST_WALKBACK_SECONDS)
    bound = float(settings.ALERTS_SINCE_MAX_WALKBACK_SECONDS)
    moved = 0
    if bound <= 0:
        return 0
    while open_ones and span > 0:
        span = min(span, bound)
        wider = inputs.fetch(only, now=data.now, previous=previous, span=span)
        as_of, limit = rule.as_of(wider), horizon(rule, rs, wider)
        for signal in rule.signals(wider, rs):
            fp = fingerprint(rule_id, signal.labels)
            if fp not in open_ones:
                continue
            wide = finding_for(rule_id, signal, as_of, rs.for_seconds, rs.keep_firing_for_seconds)
            if wide is None or wide.state not in ("firing", "pending"):
                continue
            if wide.since < findings[fp].since:
                findings[fp] = findings[fp]._replace(since=wide.since, detail=wide.detail)
                moved += 1
            if limit is None or wide.since > limit:
                del open_ones[fp]  # its start lies inside the data now
        span = 0.0 if span >= bound else span * 4
    return moved
