"""Admin for silences: create (nodes, a rule or matchers; presets), expire early, see matches, audit.

Silences are never edited in place (as in Alertmanager): expire one and create
another. A node list (``SilenceableNode``) has a bulk "silence nodes" action.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from . import selectors
from .matchers import describe_matchers
from .models import Silence, SilenceableNode, SilenceAudit
from .rules import REGISTRY
from .silences import (
    SilenceError,
    create_silence,
    expire_silence,
    node_matchers,
    parse_matchers,
    validate_silence,
)

PRESET_CHOICES = [("1h", "1 hour"), ("4h", "4 hours"), ("24h", "24 hours"),
                  ("until_resolved", "Until the alert resolves"), ("custom", "Custom end")]  # fmt: skip


class SilenceForm(forms.ModelForm):
    """Nodes and/or a rule and/or raw matchers, a preset or an explicit end, and a required comment."""

    nodes = forms.CharField(required=False, help_text="Node names, comma-separated.")
    rule = forms.ChoiceField(
        required=False, choices=[("", "any rule")] + [(r, r) for r in sorted(REGISTRY)]
    )
    matchers = forms.JSONField(
        required=False, initial=list,
        help_text='More matchers: [{"name": "device", "op": "=~", "value": "mlx5_[0-3]"}]; ops =, !=, =~, !~.',
    )  # fmt: skip
    preset = forms.ChoiceField(choices=PRESET_CHOICES, initial="4h")
    ends_at = forms.DateTimeField(required=False, help_text="Only with the custom preset.")
    confirm_match_all = forms.BooleanField(
        required=False,
        help_text="Needed when every matcher also matches an empty label (the silence would "
        "mute every alert lacking those labels).",
    )

    class Meta:
        model = Silence
        fields = ("starts_at", "comment")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["starts_at"].required = False
        self.fields["starts_at"].help_text = "Empty: now."

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        matchers = list(data.get("matchers") or [])
        names = [n.strip() for n in (data.get("nodes") or "").split(",") if n.strip()]
        if names:
            value = "|".join(re.escape(n) for n in names)
            matchers.append(
                {
                    "name": "node",
                    "op": "=~" if len(names) > 1 else "=",
                    "value": value if len(names) > 1 else names[0],
                }
            )
        if data.get("rule"):
            matchers.append({"name": "alertname", "op": "=", "value": data["rule"]})
        try:
            parse_matchers(matchers)
        except SilenceError as exc:
            raise forms.ValidationError(f"Give nodes, a rule or matchers. {exc}") from None
        data["all_matchers"] = matchers
        if not self.errors:
            self._validate_whole(data)
        return data

    def _validate_whole(self, data: dict[str, Any]) -> None:
        """Every check ``create_silence`` makes, here, so that saving cannot fail (no 500)."""
        custom = data.get("preset") == "custom"
        try:
            validate_silence(
                matchers=data["all_matchers"], comment=data.get("comment") or "",
                starts_at=data.get("starts_at"), ends_at=data.get("ends_at") if custom else None,
                preset=None if custom else data.get("preset"),
                confirm_match_all=bool(data.get("confirm_match_all")),
            )  # fmt: skip
        except SilenceError as exc:
            raise forms.ValidationError(str(exc)) from None


class SilenceAuditInline(admin.TabularInline):
    model = SilenceAudit
    extra = 0
    can_delete = False
    fields = ("ts", "action", "user", "detail")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Silence)
class SilenceAdmin(admin.ModelAdmin):
    """Create, expire and inspect silences."""

    form = SilenceForm
    list_display = (
        "matchers_display",
        "starts_at",
        "ends_at",
        "until_resolved",
        "created_by",
        "comment",
        "is_active_now",
    )
    actions = ("expire_now",)
    inlines = (SilenceAuditInline,)

    @admin.display(description="Matchers")
    def matchers_display(self, obj: Silence) -> str:
        return describe_matchers(obj.matchers)

    @admin.display(description="Active", boolean=True)
    def is_active_now(self, obj: Silence) -> bool:
        return obj.is_active()

    @admin.display(description="Currently matches")
    def current_matches(self, obj: Silence) -> str:
        alerts = selectors.silence_matches(obj)
        if not alerts:
            return "no pending or firing alert"
        rows = ((a.state, a.severity, a.rule, a.node or "-", a.summary) for a in alerts)
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} {} {} {}: {}</li>", rows))

    def get_inlines(self, request: HttpRequest, obj: Any = None) -> tuple:
        return self.inlines if obj is not None else ()

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return ["nodes", "rule", "matchers", "preset", "starts_at", "ends_at", "comment",
                    "confirm_match_all"]  # fmt: skip
        return ["matchers_display", "starts_at", "ends_at", "until_resolved", "comment", "created_by", "created_at",
                "expired_at", "expired_by", "current_matches"]  # fmt: skip

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if obj is None else self.get_fields(request, obj)

    def get_form(
        self, request: HttpRequest, obj: Any = None, **kwargs: Any
    ) -> type[forms.ModelForm]:
        if obj is not None:
            kwargs["form"] = forms.ModelForm
        return super().get_form(request, obj, **kwargs)

    def save_model(self, request: HttpRequest, obj: Silence, form: Any, change: bool) -> None:
        data = form.cleaned_data
        preset = data["preset"]
        try:
            silence = create_silence(
                matchers=data["all_matchers"], comment=data["comment"], created_by=request.user,
                starts_at=data.get("starts_at") or timezone.now(),
                ends_at=data.get("ends_at") if preset == "custom" else None,
                preset=None if preset == "custom" else preset,
                confirm_match_all=bool(data.get("confirm_match_all")),
            )  # fmt: skip
        except SilenceError as exc:
            raise forms.ValidationError(str(exc)) from None
        obj.pk = silence.pk
        obj.refresh_from_db()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        return  # the audit inline is read-only; create_silence wrote the audit row

    @admin.action(description="Expire selected silences now", permissions=["change"])
    def expire_now(self, request: HttpRequest, queryset: QuerySet[Silence]) -> None:
        count = sum(expire_silence(silence, request.user) for silence in queryset)
        self.message_user(request, f"Expired {count} silence(s).")


class NodeSilenceForm(forms.Form):
    """The options of the bulk "silence nodes" action."""

    preset = forms.ChoiceField(choices=PRESET_CHOICES[:4], initial="4h")
    comment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), help_text="Why (e.g. the repair ticket)."
    )


@admin.register(SilenceableNode)
class SilenceableNodeAdmin(admin.ModelAdmin):
    """Nodes, for silencing: select many, then "Silence selected nodes"."""

    list_display = ("name", "pool", "leaf_switch", "last_seen")
    list_filter = ("pool", "leaf_switch")
    search_fields = ("name", "leaf_switch")
    actions = ("silence_nodes",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None  # the list and its actions only

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Silence selected nodes…", permissions=["view"])
    def silence_nodes(
        self, request: HttpRequest, queryset: QuerySet[SilenceableNode]
    ) -> HttpResponse | None:
        form = NodeSilenceForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            for node in queryset:
                create_silence(matchers=node_matchers(node.name), comment=form.cleaned_data["comment"],
                               created_by=request.user, preset=form.cleaned_data["preset"])  # fmt: skip
            self.message_user(request, f"Silenced {queryset.count()} node(s).", messages.SUCCESS)
            return None
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "nodes": queryset,
                   "form": form, "title": "Silence nodes",
                   "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME}  # fmt: skip
        return TemplateResponse(request, "admin/alerts/silence_nodes.html", context)
