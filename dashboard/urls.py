"""Dashboard pages and the /api/v1/ JSON endpoints behind their charts."""

from __future__ import annotations

from django.urls import include, path, register_converter

from . import views
from .converters import NodeNameConverter

register_converter(NodeNameConverter, "nodename")

urlpatterns = [
    path("", views.overview, name="overview"),
    path("fabric/", views.fabric, name="fabric"),
    path("nodes/", views.node_list, name="node-list"),
    path("nodes/<nodename:name>/", views.node_detail, name="node-detail"),
    path("alerts/", views.alert_list, name="alert-list"),
    path("alerts/<int:alert_id>/", views.alert_detail, name="alert-detail"),
    path("alerts/<int:alert_id>/triage", views.alert_triage, name="alert-triage"),
    path("api/v1/", include("dashboard.api.urls")),
    path("", include("dashboard.runs.urls")),
]
