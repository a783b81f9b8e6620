"""URL configuration: every app's URLs are wired here."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from core import views as core_views
from core.throttle import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("healthz", core_views.healthz, name="healthz"),
    path("readyz", core_views.readyz, name="readyz"),
    path("metrics", core_views.metrics, name="metrics"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/whoami", core_views.whoami, name="api-whoami"),
    path("", include("runs.urls")),
    path("", include("ingest.urls")),
    path("", include("alerts.urls")),
    path("", include("dashboard.urls")),
]
