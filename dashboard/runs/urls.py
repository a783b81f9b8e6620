"""Runs and queues pages and their JSON endpoints (included from ``dashboard.urls``).

The run domain itself (models, goodput, the advisor, selectors) is the ``runs`` app's.
"""

from __future__ import annotations

from django.urls import path

from . import api, openapi, views

openapi.register()

urlpatterns = [
    path("runs/", views.run_list, name="run-list"),
    path("runs/<str:namespace>/<path:name>/", views.run_detail, name="run-detail"),
    path("queues/", views.queue_list, name="queue-list"),
    path("api/v1/runs", api.runs, name="api-runs"),
    path("api/v1/runs/<str:namespace>/<path:name>", api.run_detail, name="api-run"),
    path("api/v1/queues", api.queues, name="api-queues"),
]
