from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from .models import APIToken, WorkerHeartbeat


@admin.register(APIToken)
class APITokenAdmin(admin.ModelAdmin):
    """Tokens are created with ``manage.py create_api_token``; here they are listed and revoked."""

    list_display = (
        "prefix",
        "user",
        "name",
        "scope",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    list_filter = ("scope",)
    search_fields = ("prefix", "user__username", "name")
    readonly_fields = ("prefix", "user", "created_at", "last_used_at")
    actions = ("revoke",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[APIToken]) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} token(s).")


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ("hostname", "seen_at")
