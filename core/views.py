"""Health, readiness, metrics and a token self-check."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import csrf
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .health import check_names, readiness
from .metrics import REGISTRY


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive; checks no dependency."""
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Every dependency is reachable: 200, else 503 with the failing ones.

    ``?only=postgres,redis`` runs only those checks (names: ``check_names``): what a web
    pod needs to serve, so a Prometheus outage does not take the dashboard out of its Service.
    """
    only = [n for n in request.GET.get("only", "").split(",") if n] or None
    unknown = sorted(set(only or ()) - set(check_names()))
    if unknown:
        known = ", ".join(sorted(check_names()))
        return JsonResponse(
            {
                "error": "bad_parameter",
                "detail": f"only: unknown check {unknown[0]!r} (known: {known})",
            },
            status=400,
        )
    ready, components = readiness(only)
    body = {"status": "ready" if ready else "not ready", "components": components}
    return JsonResponse(body, status=200 if ready else 503)


def _metrics_allowed(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if token and hmac.compare_digest(header.encode(), f"Bearer {token}".encode()):
        return True
    try:
        client = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(
        client in ipaddress.ip_network(net, strict=False) for net in settings.METRICS_ALLOWED_IPS
    )


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The app's own metrics, for clients in METRICS_ALLOWED_IPS or with METRICS_TOKEN."""
    if not _metrics_allowed(request):
        return JsonResponse(
            {"error": "forbidden", "detail": "client not allowed to read metrics"}, status=403
        )
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


@require_GET
def whoami(request: HttpRequest) -> JsonResponse:
    """Who the API thinks you are: the smallest authenticated endpoint."""
    token = getattr(request, "api_token", None)
    return JsonResponse(
        {
            "username": request.user.get_username(),
            "is_staff": request.user.is_staff,
            "auth": "token" if token else "session",
            "scope": token.scope if token else None,
        }
    )


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF refusals: JSON naming the reason for the API, Django's page elsewhere."""
    if request.path.startswith(settings.API_PREFIX):
        return JsonResponse(
            {"error": "forbidden", "detail": f"CSRF verification failed: {reason}"}, status=403
        )
    return csrf.csrf_failure(request, reason)
