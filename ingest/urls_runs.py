"""Ingest's write endpoint for runs: pushed checkpoints (wired in ``config/urls.py``)."""

from __future__ import annotations

from django.urls import path

from . import api_checkpoints

urlpatterns = [
    path(
        "api/v1/runs/<str:namespace>/<str:name>/checkpoints",
        api_checkpoints.push,
        name="api-run-checkpoints",
    ),
]
