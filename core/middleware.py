"""Request guards: clean paths and parameters before any view, JSON errors for every /api/ answer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from .validation import InputError, check_request_text, error_response

log = logging.getLogger(__name__)
Handler = Callable[[HttpRequest], HttpResponse]

#: The ``error`` code of a non-JSON error answer, by status (others: the reason phrase, slugged).
ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    429: "too_many_requests",
    500: "server_error",
}


def is_api(request: HttpRequest) -> bool:
    """Whether the request is for the JSON API."""
    return request.path.startswith(settings.API_PREFIX)


class InputGuardMiddleware:
    """Refuses NUL, unpaired surrogates and over-long values in the path and query string."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            check_request_text(request.path, dict(request.GET.lists()))
        except InputError as exc:
            if is_api(request):
                return error_response(exc)
            return HttpResponseBadRequest(
                f"Bad request: {exc.field}: {exc.detail}", content_type="text/plain"
            )
        return self.get_response(request)


def _json_error(status: int, detail: str) -> JsonResponse:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    code = ERROR_CODES.get(status, phrase.lower().replace(" ", "_"))
    return JsonResponse({"error": code, "detail": detail or phrase}, status=status)


class ApiJsonErrorsMiddleware:
    """Every /api/ error answer is JSON, whatever produced it (CSRF, 404, 405, 413, 500)."""

    def __init__(self, get_response: Handler) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api(request) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        converted = _json_error(response.status_code, _detail(response))
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                converted[header] = response[header]
        return converted

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        """A body over DATA_UPLOAD_MAX_MEMORY_SIZE is 413 (Django's own answer is a 400)."""
        if isinstance(exc, RequestDataTooBig) and is_api(request):
            return _json_error(413, "request body too large")
        return None


def _detail(response: HttpResponse) -> str:
    """A short plain-text reason, only from answers that are plain text (never an HTML page)."""
    if response.get("Content-Type", "").startswith("text/plain") and not response.streaming:
        return response.content.decode("utf-8", "replace")[:200]
    return ""
