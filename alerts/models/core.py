"""Alert state: rule settings, alerts and their history, silences and their audit trail.

The rules engine (``alerts.services``) is the only writer of ``Alert`` and
``AlertEvent``. Notification delivery reads ``Alert`` rows and decides on its
own schedule what to send, so an alert row carries everything a message needs:
state, severity, labels, value, context, summary, timestamps and the
``silenced`` / ``inhibited`` flags.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from ingest.models import Node

from ..matchers import describe_matchers
from ..severity import Severity
from ..states import AlertState, EventKind


class RuleConfig(models.Model):
    """Editable settings of one rule; defaults come from ``alerts.rules`` (seeded by a migration).

    ``params`` holds the rule's thresholds by name; ``alerts.rules.validate_config``
    checks names and types, so a typo or a wrong type is a clear error, never a
    silently ignored setting.
    """

    rule = models.CharField(
        max_length=64, unique=True, help_text="Stable rule id, e.g. gpu_tensor_drift."
    )
    enabled = models.BooleanField(default=True)
    severity = models.CharField(max_length=16, choices=Severity.choices, default=Severity.WARNING)
    for_seconds = models.PositiveIntegerField(
        default=0, help_text="How long the condition must hold before the alert fires."
    )
    keep_firing_for_seconds = models.PositiveIntegerField(
        default=0,
        help_text="How long a firing alert stays firing after the condition stops (damps flapping).",
    )
    params = models.JSONField(
        default=dict, blank=True, help_text="Thresholds by name (see the rule's help)."
    )
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["rule"]
        verbose_name = "rule setting"

    def __str__(self) -> str:
        return self.rule

    def clean(self) -> None:
        """Validate against the rule registry: unknown rule, unknown or mistyped param → error."""
        from django.core.exceptions import ValidationError

        from alerts.rules import RuleConfigError, validate_config

        try:
            validate_config(self.rule, self.params)
        except RuleConfigError as exc:
            field = "rule" if exc.field == "rule" else "params"
            raise ValidationError({field: str(exc)}) from None


class Silence(models.Model):
    """Label matchers that mute notifications of matching alerts between ``starts_at`` and ``ends_at``.

    ``matchers`` is a list of ``{"name", "op", "value"}`` with op one of ``=``,
    ``!=``, ``=~``, ``!~`` (regexes are fully anchored, like Alertmanager's).
    ``until_resolved`` silences have no end until every alert they matched has
    resolved. Expired silences are kept ``ALERTS_SILENCE_RETENTION_SECONDS``, then purged.
    """

    matchers = models.JSONField()
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True)
    until_resolved = models.BooleanField(default=False)
    comment = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="alert_silences",
    )
    created_at = models.DateTimeField(default=timezone.now)
    expired_at = models.DateTimeField(null=True, blank=True, help_text="Set when expired early.")
    expired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-starts_at"]
        indexes = [models.Index(fields=["ends_at"])]

    def __str__(self) -> str:
        return describe_matchers(self.matchers)

    def is_active(self, now: datetime | None = None) -> bool:
        """Whether the silence mutes alerts at ``now`` (default: the current time)."""
        moment = now or timezone.now()
        return self.starts_at <= moment and (self.ends_at is None or moment < self.ends_at)


class SilenceAudit(models.Model):
    """Who did what to a silence, kept after the silence itself is purged."""

    class Action(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        EXPIRED = "expired", "Expired early"
        ENDED = "ended", "Ended (its alerts resolved)"
        PURGED = "purged", "Purged"

    silence = models.ForeignKey(Silence, null=True, on_delete=models.SET_NULL, related_name="audit")
    silence_ref = models.BigIntegerField(help_text="The silence id, kept after purge.")
    ts = models.DateTimeField(default=timezone.now)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-ts"]

    def __str__(self) -> str:
        return f"silence {self.silence_ref} {self.action}"


class Alert(models.Model):
    """One episode of one fingerprint (rule + scope labels): pending → firing → resolved.

    At most one pending-or-firing row exists per fingerprint; a fault that comes
    back after its alert resolved opens a new row. Times are data times (when
    the condition held in the stored series), so a backfill or restart never
    shifts them. ``value`` / ``context`` / ``summary`` are captured when the
    alert starts firing (while pending they follow the latest data).
    """

    rule = models.CharField(max_length=64)
    fingerprint = models.CharField(max_length=64, help_text="sha256 of rule + scope labels.")
    labels = models.JSONField(
        help_text="alertname, severity, scope labels and extra labels (leaf_switch, run…)."
    )
    node = models.CharField(
        max_length=253, blank=True, help_text="The node label, for quick filtering."
    )
    severity = models.CharField(max_length=16, choices=Severity.choices)
    state = models.CharField(max_length=16, choices=AlertState.choices)
    value = models.FloatField(null=True, blank=True)
    context = models.JSONField(default=dict, blank=True)
    summary = models.CharField(max_length=500, blank=True)
    pending_since = models.DateTimeField(
        help_text="When the condition started holding (Prometheus activeAt)."
    )
    firing_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it started firing (pending_since + for); pending_since is when it began.",
    )
    last_match_at = models.DateTimeField(help_text="The last time the condition held in the data.")
    resolved_at = models.DateTimeField(null=True, blank=True)
    silenced = models.BooleanField(default=False)
    silenced_by = models.ForeignKey(
        Silence, null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    inhibited = models.BooleanField(default=False)
    inhibited_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="inhibits"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now, help_text="Last change of any field.")

    class Meta:
        ordering = ["-pending_since"]
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint"],
                condition=Q(state__in=["pending", "firing"]),
                name="uniq_active_alert_fingerprint",
            )
        ]
        indexes = [
            models.Index(fields=["state", "rule"]),
            models.Index(fields=["node", "pending_since"]),
            models.Index(fields=["updated_at"]),
        ]

    def __str__(self) -> str:
        scope = ",".join(
            f"{k}={v}" for k, v in sorted(self.labels.items()) if k not in ("alertname", "severity")
        )
        return f"{self.rule}{{{scope}}} {self.state}"


class AlertEvent(models.Model):
    """One transition of an alert (state, silence or inhibition): the full history."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    ts = models.DateTimeField(default=timezone.now, help_text="Wall-clock time of the evaluation.")
    kind = models.CharField(max_length=16, choices=EventKind.choices)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["ts", "id"]
        indexes = [models.Index(fields=["alert", "ts"])]

    def __str__(self) -> str:
        return f"{self.alert_id} {self.kind} @ {self.ts:%Y-%m-%d %H:%M:%S}"


class Evaluation(models.Model):
    """One evaluation of all rules: when, how long, what changed (shown in the admin and overview)."""

    started_at = models.DateTimeField(default=timezone.now)
    duration_seconds = models.FloatField(default=0.0)
    trigger = models.CharField(
        max_length=32, default="manual", help_text="ingest, manual, schedule"
    )
    changes = models.IntegerField(default=0)
    firing = models.IntegerField(default=0)
    pending = models.IntegerField(default=0)
    timings = models.JSONField(default=dict, blank=True, help_text="seconds per phase and per rule")
    as_of = models.JSONField(
        default=dict, blank=True, help_text="data time judged, per ingest family"
    )

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"evaluation @ {self.started_at:%Y-%m-%d %H:%M:%S}"


class SilenceableNode(Node):
    """Ingest's nodes, listed in the alerts admin so they can be silenced in bulk."""

    class Meta:
        proxy = True
        verbose_name = "node (silence)"
        verbose_name_plural = "nodes (silence)"
