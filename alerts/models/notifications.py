"""Notification delivery models: channels, group state, the outbox and the delivery log."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models

from core.validation import text_problem

from ..matchers import MAX_MATCHERS, MAX_NAME_CHARS, MAX_VALUE_CHARS, MatcherError, compile_regex
from ..notify.grouping import MATCH_OPS, Matcher, Route, Timing
from ..transports.base import ChannelTarget
from .core import Severity, Silence

__all__ = [
    "AttemptOutcome",
    "ChannelKind",
    "DeliveryAttempt",
    "NotificationChannel",
    "NotificationGroup",
    "Outbox",
    "OutboxStatus",
    "SilenceMirror",
]


class ChannelKind(models.TextChoices):
    SLACK = "slack", "Slack incoming webhook"
    WEBHOOK = "webhook", "Webhook (Alertmanager v4 JSON, signed)"
    ALERTMANAGER = "alertmanager", "Alertmanager (POST /api/v2/alerts)"
    PAGERDUTY = "pagerduty", "PagerDuty Events API v2"
    EMAIL = "email", "Email (SMTP settings from the environment)"


EMAIL_RECIPIENTS_HELP = "Email only: addresses separated by commas."


def _validate_recipients(value: str) -> None:
    for address in recipient_list(value):
        validate_email(address)


def recipient_list(value: str) -> tuple[str, ...]:
    """The addresses of a comma-separated recipients field."""
    return tuple(a.strip() for a in value.split(",") if a.strip())


def _validate_matchers(value: object) -> None:
    if not isinstance(value, list):
        raise ValidationError(
            'Expected a list like [{"name": "pool", "op": "=", "value": "training"}].'
        )
    if len(value) > MAX_MATCHERS:
        raise ValidationError(f"At most {MAX_MATCHERS} matchers.")
    for item in value:
        if not isinstance(item, dict) or set(item) != {"name", "op", "value"}:
            raise ValidationError(f"Each matcher needs exactly name, op and value: {item!r}.")
        if item["op"] not in MATCH_OPS:
            raise ValidationError(
                f"Unknown operator {item['op']!r}; use one of {', '.join(MATCH_OPS)}."
            )
        if not all(isinstance(item[key], str) for key in ("name", "value")):
            raise ValidationError(f"Matcher name and value must be text: {item!r}.")
        problem = text_problem(item["name"]) or text_problem(item["value"])
        if problem or len(item["name"]) > MAX_NAME_CHARS or len(item["value"]) > MAX_VALUE_CHARS:
            raise ValidationError(
                f"Matcher name (at most {MAX_NAME_CHARS} characters) or value (at most "
                f"{MAX_VALUE_CHARS}) out of bounds: {problem or 'too long'}."
            )
        if item["op"] in ("=~", "!~"):
            try:
                compile_regex(item["value"])
            except MatcherError as exc:
                raise ValidationError(f"{item['value']!r}: {exc}.") from None


def url_hint(url: str) -> str:
    """``https://hooks.slack.com/…abcd``: enough to recognise a URL, not to use it."""
    if not url:
        return "not set"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "set"
    return f"{parts.scheme}://{host}{port}/…{url[-4:]}" if len(url) >= 16 else "set"


def _validate_group_by(value: object) -> None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValidationError('Expected a list of label names, e.g. ["alertname", "leaf_switch"].')


def _validate_positive(value: timedelta) -> None:
    if value <= timedelta(0):
        raise ValidationError("Must be longer than zero.")


class NotificationChannel(models.Model):
    """Where notifications go (Slack, a webhook, an Alertmanager), which alerts, and how grouped."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=ChannelKind)
    url = models.URLField(
        max_length=2000,
        blank=True,
        help_text=(
            "Slack incoming-webhook URL, webhook URL, Alertmanager base URL, or PagerDuty "
            "events URL (https://events.pagerduty.com/v2/enqueue). Not used by email."
        ),
    )
    secret = models.CharField(
        max_length=200,
        blank=True,
        help_text="Webhook: the signing key. PagerDuty: the integration's routing key.",
    )
    recipients = models.CharField(
        max_length=2000,
        blank=True,
        validators=[_validate_recipients],
        help_text=EMAIL_RECIPIENTS_HELP,
    )
    min_severity = models.CharField(max_length=16, choices=Severity, default=Severity.WARNING)
    matchers = models.JSONField(
        default=list,
        blank=True,
        validators=[_validate_matchers],
        help_text='Label matchers, all must hold: [{"name": "pool", "op": "=~", "value": "train.*"}].',
    )
    group_by = models.JSONField(
        default=list,
        blank=True,
        validators=[_validate_group_by],
        help_text='Labels to group by; empty = alertname + leaf_switch if any, else + node; ["..."] = none.',
    )
    group_wait = models.DurationField(
        default=timedelta(seconds=30), validators=[_validate_positive]
    )
    group_interval = models.DurationField(
        default=timedelta(minutes=5), validators=[_validate_positive]
    )
    repeat_interval = models.DurationField(
        default=timedelta(hours=4), validators=[_validate_positive]
    )
    send_resolved = models.BooleanField(default=True)
    watchdog = models.BooleanField(
        default=False,
        help_text="Also send the always-firing watchdog alert (a dead man's switch: the receiver "
        "pages when it stops arriving). It bypasses the severity and matchers.",
    )
    notify_acks = models.BooleanField(
        default=False,
        help_text="Tell this channel when an alert is acknowledged (a notification of the group; "
        "PagerDuty: an acknowledge event).",
    )
    enabled = models.BooleanField(default=True)
    disabled_reason = models.TextField(blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    def clean(self) -> None:
        """An email channel needs recipients, every other kind a URL."""
        if self.kind == ChannelKind.EMAIL and not recipient_list(self.recipients):
            raise ValidationError({"recipients": "An email channel needs at least one address."})
        if self.kind != ChannelKind.EMAIL and not self.url:
            raise ValidationError({"url": "This kind of channel needs a URL."})

    def route(self) -> Route:
        """The channel's routing and grouping, for the pure grouping code."""
        return Route(
            min_severity=self.min_severity,
            matchers=tuple(Matcher(m["name"], m["op"], m["value"]) for m in self.matchers),
            group_by=tuple(self.group_by),
            watchdog=self.watchdog,
        )

    def timing(self) -> Timing:
        """The channel's group_wait / group_interval / repeat_interval."""
        return Timing(self.group_wait, self.group_interval, self.repeat_interval)

    def target(self) -> ChannelTarget:
        """What a transport needs to deliver to this channel."""
        return ChannelTarget(
            name=self.name,
            kind=self.kind,
            url=self.url,
            secret=self.secret,
            recipients=recipient_list(self.recipients),
        )

    @property
    def url_hint(self) -> str:
        """The URL as the admin shows it once saved: scheme and host, then its last 4 characters.

        A Slack incoming-webhook URL is itself the credential (and webhook or Alertmanager URLs
        may carry a token or a password): like the secret, it is never shown in full again.
        """
        return url_hint(self.url)

    def secret_hint(self) -> str:
        """The secret as the admin shows it: never in full."""
        if not self.secret:
            return "not set"
        return f"set, ending …{self.secret[-4:]}" if len(self.secret) >= 16 else "set"


class NotificationGroup(models.Model):
    """One alert group of one channel: when it was first seen and last notified, and with what."""

    channel = models.ForeignKey(
        NotificationChannel, on_delete=models.CASCADE, related_name="groups"
    )
    key = models.TextField(help_text='Group labels, Alertmanager style: {alertname="x",node="y"}.')
    key_hash = models.CharField(max_length=64)
    labels = models.JSONField(default=dict)
    first_seen_at = models.DateTimeField()
    last_sent_at = models.DateTimeField(null=True, blank=True)
    notified = models.JSONField(default=dict, help_text="Alert id → status last notified.")
    sequence = models.PositiveIntegerField(default=0, help_text="Notifications written so far.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["channel", "key_hash"], name="notify_group_unique_key")
        ]

    def __str__(self) -> str:
        return f"{self.channel.name} {self.key}"


class OutboxStatus(models.TextChoices):
    PENDING = "pending"
    SENDING = "sending"
    DELIVERED = "delivered"
    FAILED = "failed"


class Outbox(models.Model):
    """One notification to deliver; claimed by one sender at a time under a lease."""

    key = models.CharField(max_length=200, unique=True, help_text="Idempotency key.")
    channel = models.ForeignKey(
        NotificationChannel, on_delete=models.CASCADE, related_name="outbox"
    )
    group = models.ForeignKey(NotificationGroup, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(max_length=16, choices=OutboxStatus, default=OutboxStatus.PENDING)
    payload = models.JSONField(help_text="The webhook v4 message; other transports render from it.")
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name_plural = "outbox"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notify_outbox_due")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status})"


class AttemptOutcome(models.TextChoices):
    SENDING = "sending", "in progress"
    DELIVERED = "delivered"
    RETRY = "retry", "failed, will retry"
    REJECTED = "rejected", "refused, not retried"
    CHANNEL_GONE = "channel_gone", "destination gone, channel disabled"
    GAVE_UP = "gave_up", "failed, out of attempts"
    ABANDONED = "abandoned", "sender lost (lease expired)"


class DeliveryAttempt(models.Model):
    """The delivery log: one row per attempt to send one outbox row."""

    outbox = models.ForeignKey(Outbox, on_delete=models.CASCADE, related_name="delivery_attempts")
    channel = models.ForeignKey(NotificationChannel, on_delete=models.CASCADE, related_name="+")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(
        max_length=16, choices=AttemptOutcome, default=AttemptOutcome.SENDING
    )
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response = models.TextField(blank=True, help_text="The start of the receiver's answer.")

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["outbox", "number"], name="notify_attempt_unique_number"
            )
        ]

    def __str__(self) -> str:
        return f"#{self.number} of {self.outbox_id}: {self.outcome}"

    @property
    def latency_ms(self) -> int | None:
        """How long the attempt took, in milliseconds (None while in progress)."""
        if self.finished_at is None:
            return None
        return round((self.finished_at - self.started_at).total_seconds() * 1000)


class SilenceMirror(models.Model):
    """A ClusterWatch silence as mirrored into one Alertmanager channel (its silence id there)."""

    channel = models.ForeignKey(
        NotificationChannel, on_delete=models.CASCADE, related_name="silence_mirrors"
    )
    silence = models.ForeignKey(Silence, null=True, blank=True, on_delete=models.SET_NULL)
    silence_ref = models.BigIntegerField(help_text="The ClusterWatch silence id, kept after purge.")
    alertmanager_id = models.CharField(max_length=64, blank=True)
    sent = models.JSONField(default=dict, help_text="What Alertmanager was last told (no endsAt).")
    ends_at = models.DateTimeField(null=True, blank=True, help_text="The endsAt Alertmanager has.")
    synced_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["channel", "silence_ref"], name="notify_silence_mirror_unique"
            )
        ]

    def __str__(self) -> str:
        return f"silence {self.silence_ref} in {self.channel.name}: {self.alertmanager_id or '-'}"
