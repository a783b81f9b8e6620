"""Who handles an alert (acknowledgement, assignee) and its audit trail; per-pool / per-GPU-model
rule overrides; the admin's namespace → team mapping.

These rows are written by people (the API, the alerts pages, the admin), never by the rules
engine, so they live beside ``Alert`` rather than in it: an evaluation's bulk writes of alert
state never touch them.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from .core import Alert


class AlertTriage(models.Model):
    """The acknowledgement and the assignee of one alert (one row per alert, made on first use).

    An acknowledged alert is not re-notified at the channel's ``repeat_interval`` (until
    ``ack_until``, when given); it still resolves, and a fault that comes back is a new alert.
    """

    alert = models.OneToOneField(Alert, on_delete=models.CASCADE, related_name="triage")
    acked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    acked_at = models.DateTimeField(null=True, blank=True)
    ack_comment = models.TextField(blank=True)
    ack_until = models.DateTimeField(
        null=True, blank=True, help_text="The acknowledgement lapses then (empty: until resolved)."
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "alert acknowledgement"

    def __str__(self) -> str:
        return f"triage of alert {self.alert_id}"

    def is_acked(self, now: datetime | None = None) -> bool:
        """Whether the acknowledgement holds at ``now`` (default: the current time)."""
        moment = now or timezone.now()
        return self.acked_at is not None and (self.ack_until is None or moment < self.ack_until)


class AlertAudit(models.Model):
    """Who acknowledged, un-acknowledged or assigned an alert, and when; kept after the alert."""

    class Action(models.TextChoices):
        ACKED = "acked", "Acknowledged"
        UNACKED = "unacked", "Acknowledgement removed"
        ASSIGNED = "assigned", "Assigned"
        UNASSIGNED = "unassigned", "Unassigned"

    alert = models.ForeignKey(
        Alert, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit"
    )
    alert_ref = models.BigIntegerField(help_text="The alert id, kept after the alert is deleted.")
    ts = models.DateTimeField(default=timezone.now)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-ts", "-id"]

    def __str__(self) -> str:
        return f"alert {self.alert_ref} {self.action}"


class OverrideScope(models.TextChoices):
    """What a rule override applies to: the nodes of one pool, or of one GPU model."""

    POOL = "pool", "Pool"
    GPU_MODEL = "gpu_model", "GPU model"


class RuleOverride(models.Model):
    """Thresholds of one rule for the nodes of one pool or GPU model (over the rule's setting).

    ``params`` is validated like ``RuleConfig.params``; a GPU-model override wins over a
    pool override, both over the rule setting. Only node-scoped alerts use them.
    """

    rule = models.CharField(max_length=64)
    scope = models.CharField(max_length=16, choices=OverrideScope.choices)
    value = models.CharField(
        max_length=253,
        help_text="The pool (training, inference) or GPU model (NVIDIA H100 80GB HBM3).",
    )
    params = models.JSONField(default=dict, help_text="Thresholds by name (see the rule's help).")
    updated_at = models.DateTimeField(default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["rule", "scope", "value"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "scope", "value"], name="uniq_rule_override")
        ]

    def __str__(self) -> str:
        return f"{self.rule} for {self.scope}={self.value}"

    def clean(self) -> None:
        """Validate rule and params as ``RuleConfig`` does."""
        from django.core.exceptions import ValidationError

        from alerts.rules import RuleConfigError, validate_config

        try:
            self.params = validate_config(self.rule, self.params)
        except RuleConfigError as exc:
            field = "rule" if exc.field == "rule" else "params"
            raise ValidationError({field: str(exc)}) from None


class NamespaceTeam(models.Model):
    """The team that owns a namespace: node alerts hurting its runs carry ``team`` (wins over
    ``ALERTS_NAMESPACE_TEAMS``)."""

    namespace = models.CharField(max_length=253, unique=True)
    team = models.CharField(max_length=128)

    class Meta:
        ordering = ["namespace"]
        verbose_name = "namespace team"

    def __str__(self) -> str:
        return f"{self.namespace} → {self.team}"
