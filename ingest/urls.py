"""Ingest's URLs (included at the root by ``config/urls.py``)."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("coverage/", views.coverage_page, name="coverage"),
    path("api/v1/coverage", views.coverage_json, name="api-coverage"),
]
