"""Evaluate every rule over stored data and move alerts through their lifecycle.

``evaluate()`` is the one entry point (Celery task, management command, bench):
fetch (``alerts.inputs``) → pure rules and lifecycle (``alerts.rules``,
``alerts.lifecycle``) → one transaction that opens/updates/resolves ``Alert``
rows, records ``AlertEvent`` history, marks inhibited and silenced alerts, and
after commit publishes an ``alerts.changed`` live event when anything changed.
Evaluations serialise on a Postgres advisory lock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from . import attribution, inputs, overrides
from .events import alerts_changed
from .lifecycle import Decision, Finding, Tracked, decide, finding_for
from .models import (
    ACTIVE_STATES,
    Alert,
    AlertEvent,
    AlertState,
    Evaluation,
    EventKind,
    RuleConfig,
)
from .muting import apply_muting, end_until_resolved_silences
from .rules import REGISTRY, RuleConfigError, RuleSettings, settings_for
from .rules.data import EvaluationData
from .silences import purge_expired
from .since import walk_back

log = logging.getLogger(__name__)
EVALUATION_LOCK_KEY = 0x1C57_A1E7
ALERT_FIELDS = [
    "state",
    "severity",
    "labels",
    "node",
    "value",
    "context",
    "summary",
    "pending_since",
    "firing_at",
    "last_match_at",
    "resolved_at",
    "silenced",
    "silenced_by",
    "inhibited",
    "inhibited_by",
    "updated_at",
]


def to_dt(ts: float) -> datetime:
    """Unix seconds → aware UTC datetime."""
    return datetime.fromtimestamp(ts, UTC)


def fingerprint(rule: str, labels: dict[str, str]) -> str:
    """The identity of an alert: sha256 over the rule id and its scope labels."""
    return hashlib.sha256(json.dumps([rule, sorted(labels.items())]).encode()).hexdigest()


def ensure_rule_configs() -> int:
    """Create the RuleConfig rows of rules added after the seed migration; returns how many."""
    existing = set(RuleConfig.objects.values_list("rule", flat=True))
    missing = [rule.defaults() for rule_id, rule in REGISTRY.items() if rule_id not in existing]
    RuleConfig.objects.bulk_create(
        [
            RuleConfig(
                rule=d.rule,
                severity=d.severity,
                for_seconds=int(d.for_seconds),
                keep_firing_for_seconds=int(d.keep_firing_for_seconds),
                params=d.params,
            )
            for d in missing
        ],
        ignore_conflicts=True,
    )
    return len(missing)


def settings_from_config(config: RuleConfig) -> RuleSettings:
    """A stored RuleConfig as effective settings (validated; RuleConfigError if invalid)."""
    return settings_for(
        config.rule,
        enabled=config.enabled,
        severity=config.severity,
        for_seconds=config.for_seconds,
        keep_firing_for_seconds=config.keep_firing_for_seconds,
        params=config.params,
    )


def load_rule_settings() -> dict[str, RuleSettings]:
    """Every registered rule's effective settings; a stored config that fails validation keeps defaults."""
    stored = {c.rule: c for c in RuleConfig.objects.all()}
    loaded = {}
    for rule_id, rule in REGISTRY.items():
        config = stored.get(rule_id)
        try:
            loaded[rule_id] = settings_from_config(config) if config else rule.defaults()
        except RuleConfigError as exc:  # saved around the admin's validation: say so, keep defaults
            log.warning("rule setting %s is invalid (%s); using the defaults", rule_id, exc)
            loaded[rule_id] = rule.defaults()
    return loaded


def compute_findings(
    data: EvaluationData,
    rule_settings: dict[str, RuleSettings],
    rule_variants: dict[str, list[overrides.Variant]] | None = None,
) -> tuple[dict[str, Finding], dict[str, float]]:
    """Run every enabled rule (pure): findings by fingerprint, and seconds spent per rule.

    ``rule_variants``: per rule with per-pool / per-GPU-model overrides, the settings to run it
    with and the nodes each judges (``alerts.overrides``).
    """
    findings: dict[str, Finding] = {}
    timings: dict[str, float] = {}
    for rule_id, rule in REGISTRY.items():
        rs = rule_settings[rule_id]
        if not rs.enabled:
            continue
        started = time.perf_counter()
        as_of = rule.as_of(data)
        current = []
        runs = (rule_variants or {}).get(rule_id) or [overrides.Variant(rs, None)]
        overridden = overrides.overridden_nodes(runs)
        for variant in runs:
            vs = variant.settings
            for signal in rule.signals(data, vs):
                if not variant.keeps(signal, overridden):
                    continue
                finding = finding_for(
                    rule_id, signal, as_of, vs.for_seconds, vs.keep_firing_for_seconds
                )
                if finding is not None:
                    findings[fingerprint(rule_id, signal.labels)] = finding
                    current.append(finding)
        data.current[rule_id] = current
        timings[rule_id] = time.perf_counter() - started
    return findings, timings


@dataclass
class EvaluationResult:
    """What one evaluation did."""

    changes: int = 0
    firing: int = 0
    pending: int = 0
    silenced: int = 0
    inhibited: int = 0
    timings: dict[str, Any] = field(default_factory=dict)
    evaluation_id: int | None = None


def evaluate(trigger: str = "manual", now: float | None = None) -> EvaluationResult:
    """Evaluate every rule once and apply the result (see the module docstring)."""
    started = time.perf_counter()
    timings: dict[str, Any] = {}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [EVALUATION_LOCK_KEY])
            # Every read below is an index probe or one pass over a short window: starting
            # parallel workers costs more than it saves, and takes cores from ingest.
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        ensure_rule_configs()
        rule_settings = load_rule_settings()
        last = Evaluation.objects.order_by("-started_at").values_list("as_of", flat=True).first()
        stored_overrides = overrides.load(rule_settings)
        rule_variants = (
            overrides.variants(rule_settings, stored_overrides, overrides.node_dimensions())
            if stored_overrides
            else {}
        )
        data = inputs.fetch(
            rule_settings, now=now, previous=last or {},
            extra=overrides.extra_settings(rule_variants),
        )  # fmt: skip
        timings["fetch"] = time.perf_counter() - started
        timings["queries"] = dict(inputs.LAST_TIMINGS)
        mark = time.perf_counter()
        findings, timings["rules"] = compute_findings(data, rule_settings, rule_variants)
        timings["compute"] = time.perf_counter() - mark
        mark = time.perf_counter()
        active = {a.fingerprint: a for a in Alert.objects.filter(state__in=ACTIVE_STATES)}
        walk_back(findings, set(active), rule_settings, data, fingerprint, previous=last or {})
        timings["since"] = time.perf_counter() - mark
        mark = time.perf_counter()
        # Labels are (re)computed where they are written: new alerts and pending ones.
        unsettled = [
            fp
            for fp, finding in findings.items()
            if finding.state in ACTIVE_STATES
            and (fp not in active or active[fp].state == AlertState.PENDING)
        ]
        attribution.attribute(findings, unsettled, data.max_gap)
        timings["attribution"] = time.perf_counter() - mark
        mark = time.perf_counter()
        wall = timezone.now()
        result = _apply(findings, active, rule_settings, data, wall)
        timings["write"] = time.perf_counter() - mark
        timings["total"] = time.perf_counter() - started
        result.timings = timings
        evaluation = Evaluation.objects.create(
            started_at=wall,
            duration_seconds=timings["total"],
            trigger=trigger,
            changes=result.changes,
            firing=result.firing,
            pending=result.pending,
            timings=_rounded(timings),
            as_of=data.as_of,
        )
        Evaluation.objects.filter(
            started_at__lt=wall - timedelta(seconds=settings.ALERTS_EVALUATION_RETENTION_SECONDS)
        ).delete()
        result.evaluation_id = evaluation.pk
        if result.changes:
            event = alerts_changed(
                firing=result.firing,
                pending=result.pending,
                silenced=result.silenced,
                inhibited=result.inhibited,
                changes=result.changes,
                evaluated_at=wall.isoformat(),
            )
            transaction.on_commit(lambda: _publish(event))
    return result


def _publish(event: Any) -> None:
    from core.live import publish

    publish(event)


def _rounded(timings: dict[str, Any]) -> dict[str, Any]:
    return {k: _rounded(v) if isinstance(v, dict) else round(v, 4) for k, v in timings.items()}


def _apply(
    findings: dict[str, Finding],
    active: dict[str, Alert],
    rule_settings: dict[str, RuleSettings],
    data: EvaluationData,
    wall: datetime,
) -> EvaluationResult:
    """Lifecycle, inhibition and silences in the database (``active``: the stored active alerts
    by fingerprint); one bulk write each."""
    events: list[AlertEvent] = []
    changed: dict[int, Alert] = {}  # rows to write whole
    moved: dict[int, Alert] = {}  # rows whose only change is a later last_match_at
    created: list[Alert] = []
    for fp in set(findings) | set(active):
        finding, alert = findings.get(fp), active.get(fp)
        rule_id = finding.rule if finding else alert.rule  # type: ignore[union-attr]
        rs = rule_settings.get(rule_id)
        if rs is None or not rs.enabled:
            as_of, keep, finding = data.now, 0.0, None  # unknown or disabled rule: close now
        else:
            as_of, keep = REGISTRY[rule_id].as_of(data), rs.keep_firing_for_seconds
        tracked = _tracked(alert) if alert else None
        decision = decide(tracked, finding, as_of, keep)
        _close(alert, decision, wall, events, changed)
        if decision.target is None:
            continue
        if decision.reopen:
            created.append(_open(fp, finding, decision, rs, wall))  # type: ignore[arg-type]
        else:
            _update(alert, finding, decision, rs, wall, events, changed, moved)  # type: ignore[arg-type]
    # Close before opening: a reopened fingerprint must not have two active rows at once.
    Alert.objects.bulk_update(
        [a for a in changed.values() if a.state not in ACTIVE_STATES], ALERT_FIELDS
    )
    new_alerts = Alert.objects.bulk_create(created)
    for alert in new_alerts:
        events.append(AlertEvent(alert=alert, ts=wall, kind=alert.state, detail=_detail(alert)))
    still_active = [a for a in [*active.values(), *new_alerts] if a.state in ACTIVE_STATES]
    apply_muting(still_active, wall, events, changed, {a.pk for a in new_alerts})
    Alert.objects.bulk_update(
        [a for a in changed.values() if a.state in ACTIVE_STATES], ALERT_FIELDS
    )
    # Firing alerts move last_match_at forward at every evaluation: one column, not all of them.
    Alert.objects.bulk_update(
        [a for pk, a in moved.items() if pk not in changed], ["last_match_at"]
    )
    Alert.objects.bulk_update([a for a in new_alerts if a.silenced or a.inhibited], ALERT_FIELDS)
    AlertEvent.objects.bulk_create(events)
    end_until_resolved_silences(still_active, wall)
    purge_expired(wall)
    return EvaluationResult(
        changes=sum(1 for e in events),
        firing=sum(1 for a in still_active if a.state == AlertState.FIRING),
        pending=sum(1 for a in still_active if a.state == AlertState.PENDING),
        silenced=sum(1 for a in still_active if a.silenced),
        inhibited=sum(1 for a in still_active if a.inhibited),
    )


def _tracked(alert: Alert) -> Tracked:
    return Tracked(
        alert.state,
        alert.pending_since.timestamp(),
        alert.firing_at.timestamp() if alert.firing_at else None,
        alert.last_match_at.timestamp(),
    )


def _detail(alert: Alert) -> dict[str, Any]:
    return {"value": alert.value, "summary": alert.summary}


def _close(
    alert: Alert | None,
    decision: Decision,
    wall: datetime,
    events: list[AlertEvent],
    changed: dict[int, Alert],
) -> None:
    if alert is None or decision.close_as is None:
        return
    alert.state = decision.close_as
    if decision.last_match_at is not None:
        alert.last_match_at = to_dt(max(decision.last_match_at, alert.last_match_at.timestamp()))
    if decision.close_as == AlertState.RESOLVED:
        alert.resolved_at = to_dt(decision.closed_at or wall.timestamp())
    alert.updated_at = wall
    changed[alert.pk] = alert
    events.append(AlertEvent(alert=alert, ts=wall, kind=decision.close_as, detail={}))


def _labels(finding: Finding, severity: str) -> dict[str, str]:
    return {"alertname": finding.rule, "severity": severity, **finding.extra, **finding.labels}


def _open(fp: str, finding: Finding, decision: Decision, rs: RuleSettings, wall: datetime) -> Alert:
    severity = finding.detail.severity or rs.severity
    return Alert(
        rule=finding.rule,
        fingerprint=fp,
        labels=_labels(finding, severity),
        node=finding.labels.get("node", ""),
        severity=severity,
        state=decision.target,
        value=finding.detail.value,
        context=finding.detail.context,
        summary=finding.detail.summary[:500],
        pending_since=to_dt(finding.since),
        firing_at=to_dt(finding.fired_at)
        if decision.target == AlertState.FIRING and finding.fired_at
        else None,
        last_match_at=to_dt(decision.last_match_at or finding.until),
        created_at=wall,
        updated_at=wall,
    )


def _update(
    alert: Alert,
    finding: Finding | None,
    decision: Decision,
    rs: RuleSettings,
    wall: datetime,
    events: list[AlertEvent],
    changed: dict[int, Alert],
    moved: dict[int, Alert],
) -> None:
    dirty = False
    if (
        decision.last_match_at is not None
        and decision.last_match_at > alert.last_match_at.timestamp()
    ):
        alert.last_match_at = to_dt(decision.last_match_at)
        moved[alert.pk] = alert
    starts_firing = alert.state == AlertState.PENDING and decision.target == AlertState.FIRING
    if finding is not None and (starts_firing or alert.state == AlertState.PENDING):
        # Pending alerts follow the latest data; firing ones keep what they fired with.
        severity = finding.detail.severity or rs.severity
        latest = (
            finding.detail.value,
            finding.detail.context,
            finding.detail.summary[:500],
            severity,
            _labels(finding, severity),
        )
        dirty = latest != (alert.value, alert.context, alert.summary, alert.severity, alert.labels)
        alert.value, alert.context, alert.summary, alert.severity, alert.labels = latest
    if starts_firing:
        alert.state = AlertState.FIRING
        alert.firing_at = to_dt(
            finding.fired_at if finding and finding.fired_at else wall.timestamp()
        )
        events.append(
            AlertEvent(alert=alert, ts=wall, kind=EventKind.FIRING, detail=_detail(alert))
        )
    if dirty or starts_firing:
        alert.updated_at = wall if starts_firing else alert.updated_at
        changed[alert.pk] = alert
