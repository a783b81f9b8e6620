"""Admin for notification channels, the outbox and the delivery log.

A channel's secret and its URL (a Slack webhook URL is a credential) are write-only:
the form never renders them, leaving the field blank keeps them, and the list and
detail pages show only a hint.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from .models import AttemptOutcome, DeliveryAttempt, NotificationChannel, Outbox, OutboxStatus
from .notify import outbox, services

LOG_ROWS = 200  # attempts shown on a channel's delivery log page


class ChannelForm(forms.ModelForm):
    """Channel form with a write-only secret."""

    secret = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Webhook only. Leave blank to keep the current secret.",
    )
    url = forms.URLField(
        max_length=2000,
        assume_scheme="https",
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Slack webhook URL, webhook URL or Alertmanager base URL. Write-only: once "
        "saved it is shown masked; leave blank to keep the current URL.",
    )
    clear_secret = forms.BooleanField(required=False, help_text="Remove the current secret.")

    class Meta:
        model = NotificationChannel
        fields = [
            "name",
            "kind",
            "url",
            "secret",
            "recipients",
            "min_severity",
            "matchers",
            "group_by",
            "group_wait",
            "group_interval",
            "repeat_interval",
            "send_resolved",
            "watchdog",
            "enabled",
        ]

    def clean_url(self) -> str:
        value = self.cleaned_data.get("url", "")
        if value:
            return value
        if self.instance.pk and self.instance.url:
            return self.instance.url
        raise forms.ValidationError("This field is required.")

    def clean_secret(self) -> str:
        value = self.cleaned_data.get("secret", "")
        if self.data.get("clear_secret"):
            return ""
        return value or (self.instance.secret if self.instance.pk else "")


@admin.register(NotificationChannel)
class NotificationChannelAdmin(admin.ModelAdmin):
    """Channels: the disabled reason is shown in the list so a dead destination is visible."""

    form = ChannelForm
    list_display = ["name", "kind", "url_hint", "enabled", "min_severity", "secret_hint",
                    "disabled_reason", "delivery_log"]  # fmt: skip
    list_filter = ["kind", "enabled"]
    readonly_fields = [
        "url_hint",
        "secret_hint",
        "disabled_reason",
        "disabled_at",
        "created_at",
        "updated_at",
    ]
    actions = ["send_test_notification", "enable_channels"]

    @admin.action(description="Send a test notification")
    def send_test_notification(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        for channel in queryset:
            self.send_test(request, channel)

    def send_test(self, request: HttpRequest, channel: NotificationChannel) -> None:
        """Send one test notification now and tell what the receiver answered."""
        if not channel.enabled:
            self.message_user(
                request, f"{channel.name}: disabled, enable it first.", messages.ERROR
            )
            return
        row = services.write_test_notification(channel, str(request.user))
        outbox.deliver(row.id)
        attempt = row.delivery_attempts.order_by("-number").first()
        if attempt is None:
            self.message_user(request, f"{channel.name}: not sent.", messages.ERROR)
            return
        ok = attempt.outcome == AttemptOutcome.DELIVERED
        level = messages.SUCCESS if ok else messages.ERROR
        self.message_user(request, test_result(channel, attempt), level)

    def get_urls(self) -> list:
        log = self.admin_site.admin_view(self.delivery_log_view)
        test = self.admin_site.admin_view(self.send_test_view)
        return [
            path("<int:pk>/deliveries/", log, name="alerts_notificationchannel_deliveries"),
            path("<int:pk>/send-test/", test, name="alerts_notificationchannel_send_test"),
            *super().get_urls(),
        ]

    def send_test_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """POST: send this channel a test notification, then show its delivery log."""
        channel = get_object_or_404(NotificationChannel, pk=pk)
        if request.method != "POST" or not self.has_change_permission(request, channel):
            return HttpResponseNotAllowed(["POST"])
        self.send_test(request, channel)
        return redirect("admin:alerts_notificationchannel_deliveries", pk=pk)

    def delivery_log_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The channel's last delivery attempts: outcome, status, latency, error, answer."""
        channel = get_object_or_404(NotificationChannel, pk=pk)
        rows = DeliveryAttempt.objects.filter(channel=channel).select_related("outbox")
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "channel": channel, "attempts": rows.order_by("-started_at", "-id")[:LOG_ROWS],
                   "title": f"Delivery log: {channel.name}"}  # fmt: skip
        return TemplateResponse(request, "admin/alerts/delivery_log.html", context)

    @admin.display(description="Delivery log")
    def delivery_log(self, obj: NotificationChannel) -> str:
        url = reverse("admin:alerts_notificationchannel_deliveries", args=[obj.pk])
        return format_html('<a href="{}">attempts</a>', url)

    @admin.action(description="Enable (clear the disabled reason)")
    def enable_channels(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = queryset.update(enabled=True, disabled_reason="", disabled_at=None)
        self.message_user(request, f"{count} channel(s) enabled.")


def test_result(channel: NotificationChannel, attempt: DeliveryAttempt) -> str:
    """What the admin says after a test notification: outcome, status, error, the answer."""
    text = f"{channel.name}: test notification {attempt.get_outcome_display().lower()}"
    text += f" (HTTP {attempt.status_code})" if attempt.status_code else ""
    text += f": {attempt.error}" if attempt.error else ""
    answer = attempt.response.strip()
    return text + (f"; the receiver answered: {answer[:200]}" if answer else ".")


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = ["number", "started_at", "finished_at", "outcome", "status_code", "error"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Outbox)
class OutboxAdmin(admin.ModelAdmin):
    """The outbox: read-only, with a "retry now" action for failed rows."""

    list_display = [
        "key",
        "channel",
        "status",
        "attempts",
        "next_attempt_at",
        "created_at",
        "last_error",
    ]
    list_filter = ["status", "channel"]
    search_fields = ["key"]
    readonly_fields = [f.name for f in Outbox._meta.fields]
    inlines = [DeliveryAttemptInline]
    actions = ["retry_now"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Retry now (failed or waiting rows)")
    def retry_now(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        waiting = queryset.filter(status__in=[OutboxStatus.FAILED, OutboxStatus.PENDING])
        count = waiting.update(
            status=OutboxStatus.PENDING, next_attempt_at=timezone.now(), processed_at=None
        )
        self.message_user(request, f"{count} notification(s) queued; the next flush sends them.")


@admin.register(DeliveryAttempt)
class DeliveryAttemptAdmin(admin.ModelAdmin):
    """The delivery log: one row per attempt."""

    list_display = ["outbox", "channel", "number", "started_at", "outcome", "status_code", "error"]
    list_filter = ["outcome", "channel"]
    readonly_fields = [f.name for f in DeliveryAttempt._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
