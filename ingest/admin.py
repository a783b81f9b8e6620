"""Admin: read-mostly views of what ingest knows and how it is doing."""

from __future__ import annotations

from django.contrib import admin

from .models import (
    FamilyHealth,
    IbPort,
    IngestCursor,
    IngestCycle,
    Node,
    PrometheusOutage,
    XidEvent,
)


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "pool", "unschedulable", "leaf_switch", "first_seen", "last_seen")
    list_filter = ("pool", "unschedulable")
    search_fields = ("name", "leaf_switch")


@admin.register(IbPort)
class IbPortAdmin(admin.ModelAdmin):
    list_display = ("node", "device", "port", "guid", "leaf_switch", "switch_port")
    search_fields = ("node__name", "guid", "leaf_switch")
    list_select_related = ("node",)


@admin.register(XidEvent)
class XidEventAdmin(admin.ModelAdmin):
    list_display = ("ts", "node", "gpu", "code", "message")
    list_filter = ("code",)
    search_fields = ("node__name",)
    list_select_related = ("node",)


@admin.register(FamilyHealth)
class FamilyHealthAdmin(admin.ModelAdmin):
    list_display = (
        "family",
        "last_success",
        "lag_seconds",
        "duration_seconds",
        "last_rows",
        "skipped",
        "errors",
    )


@admin.register(IngestCursor)
class IngestCursorAdmin(admin.ModelAdmin):
    list_display = ("family", "covered_until")


@admin.register(IngestCycle)
class IngestCycleAdmin(admin.ModelAdmin):
    list_display = (
        "family",
        "started_at",
        "finished_at",
        "window_start",
        "window_end",
        "rows",
        "skipped",
        "error",
    )
    list_filter = ("family",)


@admin.register(PrometheusOutage)
class PrometheusOutageAdmin(admin.ModelAdmin):
    list_display = ("started_at", "ended_at", "detail")
