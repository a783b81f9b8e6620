"""The alerts API: alerts and silences (wired at the root by ``config.urls``)."""

from __future__ import annotations

from django.urls import path

from . import api, maintenance_views

urlpatterns = [
    path("api/v1/alerts", api.alerts, name="api-alerts"),
    path("api/v1/silences", api.silences, name="api-silences"),
    path("api/v1/silences/<int:silence_id>", api.silence_detail, name="api-silence-detail"),
    path("maintenance/", maintenance_views.node_maintenance, name="node-maintenance"),
]
