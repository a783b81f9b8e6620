"""/api/v1/ routes of the dashboard (included from ``dashboard.urls``)."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("heatmap", views.heatmap, name="api-heatmap"),
    path("rails", views.rails, name="api-rails"),
    path("overview", views.overview, name="api-overview"),
    path("nodes/<nodename:name>", views.node, name="api-node"),
    path("openapi.json", views.openapi, name="api-openapi"),
]
