"""JSON (and CSV) API of alert history, acknowledgements and assignments.

``GET /api/v1/alerts`` pages through alerts newest first with an opaque cursor;
``format=csv`` answers the same page as CSV (label values are untrusted: a cell that a
spreadsheet would read as a formula is prefixed with ``'``). ``POST /api/v1/alerts/<id>/ack``
acknowledges, ``DELETE`` removes the acknowledgement, ``POST /api/v1/alerts/<id>/assign``
assigns. Bad input → 4xx JSON naming the field; nothing is changed.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.validation import DATA_MAX_FUTURE, InputError, json_body, parse_time

from . import acks, selectors
from .api import bad_request, forbidden
from .models import Alert, AlertState, Severity
from .rules import REGISTRY

LABEL_FILTERS = ("namespace", "team", "pool", "run", "queue")
ALERT_FILTERS = {"state", "rule", "node", "severity", "since", "until", "cursor", "limit",
                 "format", *LABEL_FILTERS}  # fmt: skip
API_STATES = (AlertState.FIRING, AlertState.PENDING, AlertState.RESOLVED)
DEFAULT_LIMIT, MAX_LIMIT = 500, 5000
ACK_FIELDS = {"comment", "until", "assignee"}
MAX_ACK_BODY_BYTES = 16 * 1024
CSV_COLUMNS = ("id", "rule", "state", "severity", "node", "namespace", "run", "team", "pool",
               "started_at", "firing_at", "resolved_at", "value", "summary")  # fmt: skip
#: What a spreadsheet takes for the start of a formula (OWASP "CSV Injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet evaluates: text starting like a formula gets a ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def encode_cursor(alert: Alert) -> str:
    """The position after ``alert`` in the newest-first order (opaque to clients)."""
    raw = f"{alert.pending_since.isoformat()}|{alert.pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """``(pending_since, id)`` of a cursor; InputError when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        moment, _, pk = raw.partition("|")
        return datetime.fromisoformat(moment), int(pk)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InputError("cursor", "not a cursor this API returned") from None


def _choice(request: HttpRequest, name: str, allowed: tuple[str, ...]) -> str | None:
    value = request.GET.get(name) or None
    if value is not None and value not in allowed:
        raise InputError(name, f"expected one of {', '.join(allowed)}, got {value[:100]!r}")
    return value


def _limit(request: HttpRequest) -> int:
    raw = request.GET.get("limit") or str(DEFAULT_LIMIT)
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InputError("limit", f"expected an integer 1..{MAX_LIMIT}")
    return int(raw)


def _time(request: HttpRequest, name: str) -> datetime | None:
    raw = request.GET.get(name)
    return parse_time(raw, name, max_future=DATA_MAX_FUTURE) if raw else None


def filtered(request: HttpRequest) -> QuerySet[Alert]:
    """The alerts the query asks for, newest first (InputError on a bad parameter)."""
    unknown = set(request.GET) - ALERT_FILTERS
    if unknown:
        name = ascii(sorted(unknown)[0])[1:-1][:100]
        raise InputError(name, f"unknown field (expected {', '.join(sorted(ALERT_FILTERS))})")
    state = _choice(request, "state", API_STATES)
    rule = _choice(request, "rule", tuple(sorted(REGISTRY)))
    severity = _choice(request, "severity", tuple(Severity.values))
    since, until = _time(request, "since"), _time(request, "until")
    if since and until and since > until:
        raise InputError("until", "must not be before since")
    qs = Alert.objects.exclude(state=AlertState.INACTIVE)
    exact = {"state": state, "rule": rule, "severity": severity, "node": request.GET.get("node")}
    qs = qs.filter(**{k: v for k, v in exact.items() if v})
    for name in LABEL_FILTERS:
        if value := request.GET.get(name):
            qs = qs.filter(**{f"labels__{name}": value})
    if since:  # alerts whose lifetime overlaps [since, until]
        qs = qs.filter(Q(resolved_at__isnull=True) | Q(resolved_at__gte=since))
    if until:
        qs = qs.filter(pending_since__lte=until)
    if cursor := request.GET.get("cursor"):
        moment, pk = decode_cursor(cursor)
        qs = qs.filter(Q(pending_since__lt=moment) | Q(pending_since=moment, id__lt=pk))
    return qs.order_by("-pending_since", "-id")


def _page(request: HttpRequest) -> tuple[list[Alert], str | None]:
    limit = _limit(request)
    rows = list(
        filtered(request).select_related("triage__acked_by", "triage__assignee")[: limit + 1]
    )
    if len(rows) <= limit:
        return rows, None
    query = {k: v for k, v in request.GET.items() if k != "cursor"}
    following = urlencode({**query, "cursor": encode_cursor(rows[limit - 1])})
    return rows[:limit], f"{request.path}?{following}"


@require_GET
def alerts(request: HttpRequest) -> HttpResponse:
    """``GET /api/v1/alerts`` (see the module docstring and the OpenAPI document)."""
    try:
        csv_format = _choice(request, "format", ("json", "csv")) == "csv"
        page, following = _page(request)
    except InputError as exc:
        return bad_request(exc.field, exc.detail)
    if csv_format:
        return _csv(page, following)
    return JsonResponse({"alerts": [selectors.serialize_alert(a) for a in page], "next": following})


def _csv(page: list[Alert], following: str | None) -> HttpResponse:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for alert in page:
        row = selectors.serialize_alert(alert)
        labels = alert.labels or {}
        values = {**row, **{k: labels.get(k, "") for k in ("namespace", "run", "team", "pool")}}
        writer.writerow([safe_cell(values.get(column)) for column in CSV_COLUMNS])
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="alerts.csv"'
    if following:
        response["Link"] = f'<{following}>; rel="next"'
    return response


# --- acknowledge and assign --------------------------------------------------------------------


def can_triage(request: HttpRequest) -> bool:
    """The admin's permission on acknowledgements; a bearer token also needs the silence scope."""
    if not request.user.has_perm(acks.PERMISSION):
        return False
    token = getattr(request, "api_token", None)
    return token is None or token.allows(settings.ALERTS_SILENCE_TOKEN_SCOPE)


def _body(request: HttpRequest, allowed: set[str]) -> dict[str, Any]:
    body = json_body(request, max_bytes=MAX_ACK_BODY_BYTES) if request.body else {}
    if not isinstance(body, dict):
        raise InputError("body", "expected a JSON object")
    unknown = set(body) - allowed
    if unknown:
        raise InputError(
            str(sorted(unknown)[0])[:100], f"unknown field (expected {', '.join(sorted(allowed))})"
        )
    return body


def _refused(exc: InputError | acks.AckError) -> JsonResponse:
    field = exc.field
    detail = exc.detail if isinstance(exc, InputError) else exc.message
    return JsonResponse(
        {"error": "bad_request", "field": field, "detail": f"{field}: {detail}"}, status=exc.status
    )


def _triage_answer(alert: Alert) -> JsonResponse:
    alert = Alert.objects.select_related("triage__acked_by", "triage__assignee").get(pk=alert.pk)
    return JsonResponse(selectors.serialize_alert(alert))


def _alert_or_404(alert_id: int) -> Alert | JsonResponse:
    alert = Alert.objects.filter(pk=alert_id).first()
    if alert is None:
        return JsonResponse({"error": "not_found", "detail": f"no alert {alert_id}"}, status=404)
    return alert


@require_http_methods(["POST", "DELETE"])
def alert_ack(request: HttpRequest, alert_id: int) -> JsonResponse:
    """``POST`` {comment?, until?, assignee?} acknowledges; ``DELETE`` removes the acknowledgement."""
    if not can_triage(request):
        return forbidden(f"acknowledging needs the {acks.PERMISSION} permission "
                         "(and a token with the silence scope)")  # fmt: skip
    alert = _alert_or_404(alert_id)
    if isinstance(alert, JsonResponse):
        return alert
    try:
        if request.method == "DELETE":
            acks.unacknowledge(alert, request.user)
            return _triage_answer(alert)
        body = _body(request, ACK_FIELDS)
        until = body.get("until")
        until = (
            parse_time(until, "until", max_future=acks.MAX_ACK_AHEAD) if until is not None else None
        )
        assignee = acks.user_named(body["assignee"]) if body.get("assignee") is not None else None
        _ack_and_assign(alert, request.user, body.get("comment", ""), until, assignee)
    except (InputError, acks.AckError) as exc:
        return _refused(exc)
    return _triage_answer(alert)


def _ack_and_assign(
    alert: Alert, user: Any, comment: Any, until: datetime | None, assignee: Any
) -> None:
    from django.db import transaction

    with transaction.atomic():  # both or neither
        acks.acknowledge(alert, user, comment, until)
        if assignee is not None:
            acks.assign(alert, user, assignee)


@require_POST
def alert_assign(request: HttpRequest, alert_id: int) -> JsonResponse:
    """``POST`` {assignee: user name | null} assigns the alert (null: unassigns)."""
    if not can_triage(request):
        return forbidden(f"assigning needs the {acks.PERMISSION} permission "
                         "(and a token with the silence scope)")  # fmt: skip
    alert = _alert_or_404(alert_id)
    if isinstance(alert, JsonResponse):
        return alert
    try:
        body = _body(request, {"assignee"})
        if "assignee" not in body:
            raise acks.AckError("assignee", "required (a user name, or null to unassign)")
        assignee = None if body["assignee"] is None else acks.user_named(body["assignee"])
        acks.assign(alert, request.user, assignee)
    except (InputError, acks.AckError) as exc:
        return _refused(exc)
    return _triage_answer(alert)
