"""Admin: acknowledge and assign alerts (actions on the alert list), their audit trail, rule
overrides per pool and GPU model, and the namespace → team mapping."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html_join

from . import acks
from .attribution import alert_hurts
from .models import Alert, AlertAudit, NamespaceTeam, RuleOverride

ADMIN_ACK_COMMENT = "acknowledged in the admin"


def _triage_allowed(request: HttpRequest) -> bool:
    return request.user.has_perm(acks.PERMISSION)


@admin.action(description="Acknowledge the selected alerts (stops repeat notifications)")
def acknowledge_alerts(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Alert]
) -> None:
    """Acknowledge every selected active alert as the admin user."""
    if not _triage_allowed(request):
        modeladmin.message_user(request, f"Needs the {acks.PERMISSION} permission.", messages.ERROR)
        return
    done = 0
    for alert in queryset:
        try:
            acks.acknowledge(alert, request.user, ADMIN_ACK_COMMENT)
            done += 1
        except acks.AckError as exc:
            modeladmin.message_user(request, str(exc), messages.WARNING)
    modeladmin.message_user(request, f"Acknowledged {done} alert(s).")


@admin.action(description="Assign the selected alerts to me")
def assign_to_me(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Alert]
) -> None:
    """Assign every selected alert to the admin user."""
    if not _triage_allowed(request):
        modeladmin.message_user(request, f"Needs the {acks.PERMISSION} permission.", messages.ERROR)
        return
    for alert in queryset:
        acks.assign(alert, request.user, request.user)
    modeladmin.message_user(request, f"Assigned {queryset.count()} alert(s) to you.")


TRIAGE_ACTIONS = (acknowledge_alerts, assign_to_me)


@admin.display(description="Hurts")
def hurts(alert: Alert) -> str:
    """The runs the alert hurts, as notifications say it."""
    runs = alert_hurts(alert)
    if not runs:
        return "-"
    return format_html_join("", "<div>{}</div>", ((run["text"],) for run in runs))


@admin.display(description="Acknowledged / assignee")
def triage(alert: Alert) -> str:
    """Who acknowledged the alert and who it is assigned to."""
    found = acks.serialize_triage(acks.triage_of(alert), timezone.now())
    acked = found["acknowledged"]
    text = f"acknowledged by {acked['by']} at {acked['at']}" if acked else "not acknowledged"
    return text + (f"; assigned to {found['assignee']}" if found["assignee"] else "")


@admin.register(AlertAudit)
class AlertAuditAdmin(admin.ModelAdmin):
    """Who acknowledged or assigned which alert, and when (read-only)."""

    list_display = ("ts", "alert_ref", "action", "user", "detail")
    list_filter = ("action",)
    search_fields = ("alert_ref",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RuleOverride)
class RuleOverrideAdmin(admin.ModelAdmin):
    """Thresholds of a rule for one pool or GPU model; validated like rule settings."""

    list_display = ("rule", "scope", "value", "params", "updated_at", "updated_by")
    list_filter = ("rule", "scope")
    readonly_fields = ("updated_at", "updated_by")

    def save_model(self, request: HttpRequest, obj: RuleOverride, form: Any, change: bool) -> None:
        obj.updated_at, obj.updated_by = timezone.now(), request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)


@admin.register(NamespaceTeam)
class NamespaceTeamAdmin(admin.ModelAdmin):
    """namespace → team: node alerts hurting the namespace's runs carry ``team`` (over the env's map)."""

    list_display = ("namespace", "team")
    search_fields = ("namespace", "team")
