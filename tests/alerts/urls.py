"""The project's URLs with the alerts API in front (until config.urls includes alerts.urls)."""

from __future__ import annotations

from django.urls import include, path

from config.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("", include("alerts.urls")), *project_urlpatterns]
