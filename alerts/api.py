"""JSON API of alerts and silences. Bad input → 400 naming the field; nothing is changed."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_http_methods

from . import selectors
from .models import AlertState, Silence
from .rules import REGISTRY
from .silences import SilenceError, create_silence, expire_silence

ALERT_FILTERS = {"state", "rule", "node", "limit"}
SILENCE_FIELDS = {"matchers", "starts_at", "ends_at", "preset", "comment"}
API_STATES = (AlertState.FIRING, AlertState.PENDING, AlertState.RESOLVED)


def bad_request(field: str, message: str) -> JsonResponse:
    """400 with the field at fault."""
    return JsonResponse(
        {"error": "bad_request", "field": field, "detail": f"{field}: {message}"}, status=400
    )


def forbidden(message: str) -> JsonResponse:
    """403 for authenticated users without the right to write."""
    return JsonResponse({"error": "forbidden", "detail": message}, status=403)


def can_write_silences(request: HttpRequest) -> bool:
    """Staff (or holders of ``alerts.add_silence``); a token must also carry ALERTS_SILENCE_TOKEN_SCOPE."""
    user = request.user
    if not (user.is_staff or user.has_perm("alerts.add_silence")):
        return False
    token = getattr(request, "api_token", None)
    return token is None or token.allows(settings.ALERTS_SILENCE_TOKEN_SCOPE)


@require_GET
def alerts(request: HttpRequest) -> JsonResponse:
    """``GET /api/v1/alerts?state=firing|pending|resolved&rule=&node=&limit=``."""
    unknown = set(request.GET) - ALERT_FILTERS
    if unknown:
        return bad_request(
            sorted(unknown)[0], f"unknown field (expected {', '.join(sorted(ALERT_FILTERS))})"
        )
    state, rule = request.GET.get("state") or None, request.GET.get("rule") or None
    if state and state not in API_STATES:
        return bad_request("state", f"expected one of {', '.join(API_STATES)}, got {state!r}")
    if rule and rule not in REGISTRY:
        return bad_request("rule", f"unknown rule {rule!r} (known: {', '.join(sorted(REGISTRY))})")
    try:
        limit = int(request.GET.get("limit", "500"))
    except ValueError:
        return bad_request("limit", "expected an integer")
    if not 1 <= limit <= 5000:
        return bad_request("limit", "expected 1..5000")
    found = selectors.alerts(
        state=state, rule=rule, node=request.GET.get("node") or None, limit=limit
    )
    return JsonResponse({"alerts": [selectors.serialize_alert(a) for a in found]})


@require_http_methods(["GET", "POST"])
def silences(request: HttpRequest) -> JsonResponse:
    """``GET /api/v1/silences`` lists; ``POST`` creates from {matchers, starts_at?, ends_at|preset, comment}."""
    if request.method == "GET":
        return JsonResponse(
            {"silences": [selectors.serialize_silence(s) for s in selectors.silences()]}
        )
    if not can_write_silences(request):
        return forbidden(
            "creating silences needs a staff user (and a token with the silence scope)"
        )
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return bad_request("body", "expected a JSON object")
    if not isinstance(body, dict):
        return bad_request("body", "expected a JSON object")
    try:
        silence = create_silence(created_by=request.user, **_silence_fields(body))
    except SilenceError as exc:
        return bad_request(exc.field, exc.message)
    return JsonResponse(selectors.serialize_silence(silence), status=201)


def _silence_fields(body: dict[str, Any]) -> dict[str, Any]:
    unknown = set(body) - SILENCE_FIELDS
    if unknown:
        raise SilenceError(
            sorted(unknown)[0], f"unknown field (expected {', '.join(sorted(SILENCE_FIELDS))})"
        )
    for name in ("comment", "preset"):
        if name in body and body[name] is not None and not isinstance(body[name], str):
            raise SilenceError(name, "expected a string")
    return {
        "matchers": body.get("matchers"),
        "comment": body.get("comment", ""),
        "starts_at": _datetime(body, "starts_at"),
        "ends_at": _datetime(body, "ends_at"),
        "preset": body.get("preset"),
    }


def _datetime(body: dict[str, Any], name: str) -> datetime | None:
    raw = body.get(name)
    if raw is None:
        return None
    parsed = parse_datetime(raw) if isinstance(raw, str) else None
    if parsed is None:
        raise SilenceError(name, f"expected an ISO 8601 date-time, got {raw!r}")
    if parsed.tzinfo is None:
        raise SilenceError(name, "needs a time zone (e.g. 2026-01-31T12:00:00Z)")
    return parsed


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
    if not can_write_silences(request):
        return forbidden(
            "expiring silences needs a staff user (and a token with the silence scope)"
        )
    expire_silence(silence, request.user)
    silence.refresh_from_db()
    return JsonResponse(selectors.serialize_silence(silence))
