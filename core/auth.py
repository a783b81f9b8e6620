"""Login for pages, bearer tokens or session for the API; 401 JSON, never a redirect, for the API."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from .models import APIToken, hash_token
from .throttle import api_retry_after

Handler = Callable[[HttpRequest], HttpResponse]


def unauthorized(message: str) -> JsonResponse:
    """The API's answer to a missing, wrong, revoked or expired credential."""
    response = JsonResponse({"error": "unauthorized", "detail": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


def _bearer(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


class BearerTokenMiddleware:
    """Authenticates ``Authorization: Bearer`` requests to the API as the token's user."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.api_token = None  # type: ignore[attr-defined]
        raw = _bearer(request)
        if raw is None or not request.path.startswith(settings.API_PREFIX):
            return self.get_response(request)
        token = APIToken.objects.select_related("user").filter(token_hash=hash_token(raw)).first()
        if token is None or not token.is_usable or not token.user.is_active:
            return unauthorized("invalid, revoked or expired token")
        wait = api_retry_after(token.pk)
        if wait is not None:
            response = JsonResponse(
                {"error": "too_many_requests", "detail": f"token rate exceeded; retry in {wait} s"},
                status=429,
            )
            response["Retry-After"] = str(wait)
            return response
        APIToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        request.user = token.user
        request.api_token = token  # type: ignore[attr-defined]
        # A token request carries no session cookie to forge: CSRF does not apply.
        request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
        return self.get_response(request)


class LoginRequiredMiddleware:
    """Every path but the public ones needs a logged-in user (or a valid token for the API)."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response
        self.public = tuple(settings.PUBLIC_PATHS)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(self.public) or request.user.is_authenticated:
            return self.get_response(request)
        if request.path.startswith(settings.API_PREFIX):
            return unauthorized("authentication required: send Authorization: Bearer <token>")
        return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
