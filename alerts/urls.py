"""The alerts API: alerts (history, acknowledgements, assignments) and silences (wired at the root by ``config.urls``)."""

from __future__ import annotations

from django.urls import path

from . import api, api_alerts, api_overrides, maintenance_views

urlpatterns = [
    path("api/v1/alerts", api_alerts.alerts, name="api-alerts"),
    path("api/v1/alerts/<int:alert_id>/ack", api_alerts.alert_ack, name="api-alert-ack"),
    path("api/v1/alerts/<int:alert_id>/assign", api_alerts.alert_assign, name="api-alert-assign"),
    path("api/v1/rule-overrides", api_overrides.rule_overrides, name="api-rule-overrides"),
    path(
        "api/v1/rule-overrides/<int:override_id>",
        api_overrides.rule_override_detail,
        name="api-rule-override",
    ),  # fmt: skip
    path("api/v1/silences", api.silences, name="api-silences"),
    path("api/v1/silences/<int:silence_id>", api.silence_detail, name="api-silence-detail"),
    path("maintenance/", maintenance_views.node_maintenance, name="node-maintenance"),
]
