"""The runs app's write endpoint: pushed checkpoints (wired in ``config/urls.py``).

The read endpoints (``/api/v1/runs``…) are the dashboard's JSON views (``dashboard.runs.urls``);
the OpenAPI document describes both (``dashboard.runs.openapi``).
"""

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
