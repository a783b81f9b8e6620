"""JSON API of silences (alerts: ``api_alerts``). Bad input → 400 naming the field; nothing is changed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_http_methods

from core.validation import InputError, json_body, parse_time

from . import selectors
from .models import Silence
from .silences import MAX_AHEAD, SilenceError, create_silence, expire_silence

SILENCE_FIELDS = {"matchers", "starts_at", "ends_at", "preset", "comment", "confirm_match_all"}
SILENCE_PAGE_FILTERS = {"limit", "offset"}
SILENCE_PAGE_DEFAULT, SILENCE_PAGE_MAX = 100, 1000
MAX_SILENCE_BODY_BYTES = 256 * 1024


def bad_request(field: str, message: str) -> JsonResponse:
    """400 with the field at fault."""
    return JsonResponse(
        {"error": "bad_request", "field": field, "detail": f"{field}: {message}"}, status=400
    )


def forbidden(message: str) -> JsonResponse:
    """403 for authenticated users without the right to write."""
    return JsonResponse({"error": "forbidden", "detail": message}, status=403)


def can_write_silences(request: HttpRequest, permission: str = "alerts.add_silence") -> bool:
    """The admin's model permission (add to create, change to expire); a token also needs the scope.

    As in the admin, being staff is not enough: superusers hold every permission, others
    need ``alerts.add_silence`` / ``alerts.change_silence`` (docs/alerts.md).
    """
    if not request.user.has_perm(permission):
        return False
    token = getattr(request, "api_token", None)
    return token is None or token.allows(settings.ALERTS_SILENCE_TOKEN_SCOPE)


@require_http_methods(["GET", "POST"])
def silences(request: HttpRequest) -> JsonResponse:
    """``GET /api/v1/silences`` lists; ``POST`` creates from {matchers, starts_at?, ends_at|preset, comment}."""
    if request.method == "GET":
        return _silence_page(request)
    if not can_write_silences(request):
        return forbidden(
            "creating silences needs the alerts.add_silence permission "
            "(and a token with the silence scope)"
        )
    try:
        body = json_body(request, max_bytes=MAX_SILENCE_BODY_BYTES)
    except InputError as exc:
        return JsonResponse(
            {"error": "bad_request", "field": exc.field, "detail": f"{exc.field}: {exc.detail}"},
            status=exc.status,
        )
    if not isinstance(body, dict):
        return bad_request("body", "expected a JSON object")
    try:
        silence = create_silence(created_by=request.user, **_silence_fields(body))
    except SilenceError as exc:
        return bad_request(exc.field, exc.message)
    return JsonResponse(selectors.serialize_silence(silence), status=201)


def _silence_page(request: HttpRequest) -> JsonResponse:
    """``?limit=`` (1..1000, default 100) silences from ``?offset=``, newest first, with ``next``."""
    unknown = set(request.GET) - SILENCE_PAGE_FILTERS
    if unknown:
        return bad_request(sorted(unknown)[0][:100], "unknown field (expected limit, offset)")
    try:
        limit = _bounded_int(request, "limit", SILENCE_PAGE_DEFAULT, 1, SILENCE_PAGE_MAX)
        offset = _bounded_int(request, "offset", 0, 0, 10**9)
    except SilenceError as exc:
        return bad_request(exc.field, exc.message)
    page, total = selectors.silence_page(offset, limit)
    following = offset + limit if offset + limit < total else None
    return JsonResponse(
        {
            "silences": [selectors.serialize_silence(s) for s in page],
            "count": total,
            "next": f"{request.path}?limit={limit}&offset={following}" if following else None,
        }
    )


def _bounded_int(request: HttpRequest, name: str, default: int, low: int, high: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise SilenceError(name, f"expected an integer {low}..{high}")
    return int(raw)


def _silence_fields(body: dict[str, Any]) -> dict[str, Any]:
    unknown = set(body) - SILENCE_FIELDS
    if unknown:
        raise SilenceError(
            sorted(unknown)[0], f"unknown field (expected {', '.join(sorted(SILENCE_FIELDS))})"
        )
    for name in ("comment", "preset"):
        if name in body and body[name] is not None and not isinstance(body[name], str):
            raise SilenceError(name, "expected a string")
    if not isinstance(body.get("confirm_match_all", False), bool):
        raise SilenceError("confirm_match_all", "expected true or false")
    return {
        "matchers": body.get("matchers"),
        "comment": body.get("comment", ""),
        "starts_at": _datetime(body, "starts_at"),
        "ends_at": _datetime(body, "ends_at"),
        "preset": body.get("preset"),
        "confirm_match_all": body.get("confirm_match_all", False),
    }


def _datetime(body: dict[str, Any], name: str) -> datetime | None:
    raw = body.get(name)
    if raw is None:
        return None
    if isinstance(raw, str) and "T" in raw and not _has_offset(raw):
        raise SilenceError(name, "needs a time zone (e.g. 2026-01-31T12:00:00Z)")
    try:
        return parse_time(raw, name, max_future=MAX_AHEAD)
    except InputError as exc:
        raise SilenceError(exc.field, exc.detail) from None


def _has_offset(raw: str) -> bool:
    """Whether an ISO date-time names its offset (``Z`` or ``±HH:MM`` after the time)."""
    time_part = raw.partition("T")[2]
    return time_part.endswith(("Z", "z")) or "+" in time_part or "-" in time_part


@require_http_methods(["DELETE", "GET"])
def silence_detail(request: HttpRequest, silence_id: int) -> JsonResponse:
    """``GET`` one silence; ``DELETE`` expires it now (kept 5 days, then purged)."""
    silence = Silence.objects.filter(pk=silence_id).first()
    if silence is None:
        return JsonResponse(
            {"error": "not_found", "detail": f"no silence {silence_id}"}, status=404
        )
    if request.method == "GET":
        return JsonResponse(selectors.serialize_silence(silence))
    if not can_write_silences(request, "alerts.change_silence"):
        return forbidden(
            "expiring silences needs the alerts.change_silence permission "
            "(and a token with the silence scope)"
        )
    expire_silence(silence, request.user)
    silence.refresh_from_db()
    return JsonResponse(selectors.serialize_silence(silence))
