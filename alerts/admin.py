"""Admin: rule settings (editable, validated, with a backtest button), alert history (read-only), evaluations.

Silences and the "silence nodes" action live in ``admin_silences``; notification
channels and the outbox in ``admin_notify``. Both are registered by importing them here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from . import admin_notify, admin_silences  # noqa: F401 - register the notification and silence admins
from .admin_triage import TRIAGE_ACTIONS, hurts, triage
from .backtest import backtest, parse_sets, parse_span
from .models import Alert, AlertEvent, Evaluation, RuleConfig
from .rules import REGISTRY, RuleConfigError


@admin.register(RuleConfig)
class RuleConfigAdmin(admin.ModelAdmin):
    """Every threshold, ``for``, ``keep_firing_for`` and severity of a rule; validated on save."""

    list_display = (
        "rule",
        "enabled",
        "severity",
        "for_seconds",
        "keep_firing_for_seconds",
        "backtest_link",
    )
    list_editable = ("enabled", "severity")
    readonly_fields = (
        "rule",
        "description",
        "parameters",
        "updated_at",
        "updated_by",
        "backtest_link",
    )
    fields = ("rule", "description", "enabled", "severity", "for_seconds", "keep_firing_for_seconds", "params",
              "parameters", "updated_at", "updated_by", "backtest_link")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # one row per registered rule, created by the migration and evaluations

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="What it detects")
    def description(self, obj: RuleConfig) -> str:
        rule = REGISTRY.get(obj.rule)
        return rule.description if rule else "(no such rule: it is ignored)"

    @admin.display(description="Parameters")
    def parameters(self, obj: RuleConfig) -> str:
        rule = REGISTRY.get(obj.rule)
        if rule is None:
            return "-"
        rows = ((p.name, p.kind.__name__, repr(p.default), p.help) for p in rule.params)
        return format_html(
            "<ul>{}</ul>", format_html_join("", "<li><b>{}</b> ({}, default {}): {}</li>", rows)
        )

    @admin.display(description="Backtest")
    def backtest_link(self, obj: RuleConfig) -> str:
        url = reverse("admin:alerts_ruleconfig_backtest", args=[obj.pk])
        return format_html('<a class="button" href="{}?since=7d">Backtest</a>', url)

    def save_model(self, request: HttpRequest, obj: RuleConfig, form: Any, change: bool) -> None:
        from django.utils import timezone

        obj.updated_at, obj.updated_by = timezone.now(), request.user
        super().save_model(request, obj, form, change)

    def get_urls(self) -> list:
        view = self.admin_site.admin_view(self.backtest_view)
        return [
            path("<int:pk>/backtest/", view, name="alerts_ruleconfig_backtest"),
            *super().get_urls(),
        ]

    def backtest_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """Replay the rule with its stored settings (plus ``set`` overrides) over ``since``."""
        config = get_object_or_404(RuleConfig, pk=pk)
        since = request.GET.get("since", "7d")
        sets = [line.strip() for line in request.GET.get("set", "").splitlines() if line.strip()]
        report, error = None, None
        try:
            report = backtest(config.rule, parse_span(since), parse_sets(sets))
        except RuleConfigError as exc:
            error = str(exc)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "config": config,
                   "since": since, "sets": "\n".join(sets), "report": report, "error": error,
                   "title": f"Backtest {config.rule}"}  # fmt: skip
        return TemplateResponse(request, "admin/alerts/backtest.html", context)


class AlertEventInline(admin.TabularInline):
    model = AlertEvent
    extra = 0
    can_delete = False
    fields = ("ts", "kind", "detail")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    """Alert history: read-only; state is owned by the rules engine."""

    list_display = ("rule", "state", "severity", "node", "summary", "pending_since", "firing_at", "resolved_at",
                    "silenced", "inhibited")  # fmt: skip
    list_filter = ("state", "severity", "rule", "silenced", "inhibited")
    search_fields = ("node", "summary", "fingerprint")
    date_hierarchy = "pending_since"
    inlines = (AlertEventInline,)
    actions = TRIAGE_ACTIONS

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list:
        return [f.name for f in self.model._meta.fields] + [hurts, triage]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    """Recent evaluations: when, how long, what changed."""

    list_display = ("started_at", "trigger", "duration_seconds", "changes", "firing", "pending")
    list_filter = ("trigger",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
