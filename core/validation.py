"""One validation layer for every external input: API bodies, query parameters, path segments.

Every check raises ``InputError(field, detail)``; views answer it with ``error_response``,
a 400 ``{"error": "invalid", "field", "detail"}``, before anything is written.

The bounds (docs/security.md, "Input limits"):

- times of data (checkpoints, silences, ``?at=``, ``start``/``end``) lie in
  ``DATA_EARLIEST`` (2000-01-01 UTC) .. now + ``DATA_MAX_FUTURE`` (1 day); a UTC
  offset is within ±24 h (Python's own bound; ``+99:00`` is refused);
- durations are finite, >= 0 and at most ``MAX_DURATION_SECONDS`` (10 years);
- strings carry no NUL and no unpaired surrogate (Postgres and UTF-8 refuse both)
  and fit their column.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.http import HttpRequest, JsonResponse

from core import clock

DATA_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
DATA_MAX_FUTURE = timedelta(days=1)
MAX_DURATION_SECONDS = 10 * 365 * 86400.0
#: A JSON body larger than this is refused before it is decoded (endpoints may set less).
MAX_JSON_BODY_BYTES = 256 * 1024
#: Nesting deeper than this in a JSON body is refused (no endpoint needs more than 3).
MAX_JSON_DEPTH = 8
#: Query parameter values and path segments longer than this are refused.
MAX_PARAMETER_CHARS = 1000


class InputError(ValueError):
    """A refused input; ``field`` names it (``body``, ``path``, a parameter or a JSON path)."""

    def __init__(self, field: str, detail: str, status: int = 400) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail
        self.status = status


def error_response(exc: InputError) -> JsonResponse:
    """The API's answer to a refused input (400, or 413 for a body too large)."""
    return JsonResponse(
        {"error": "invalid", "field": exc.field, "detail": exc.detail}, status=exc.status
    )


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored or shown (NUL, unpaired surrogate), or None."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain unpaired surrogates (not valid Unicode)"
    return None


def check_text(value: Any, field: str, *, max_length: int, required: bool = False) -> str:
    """A clean string of at most ``max_length`` characters (``required``: not blank)."""
    if not isinstance(value, str):
        raise InputError(field, "must be a string")
    problem = text_problem(value)
    if problem:
        raise InputError(field, problem)
    if len(value) > max_length:
        raise InputError(field, f"must be at most {max_length} characters")
    if required and not value.strip():
        raise InputError(field, "must not be empty")
    return value


def check_time(
    moment: datetime,
    field: str,
    *,
    now: datetime | None = None,
    earliest: datetime = DATA_EARLIEST,
    max_future: timedelta = DATA_MAX_FUTURE,
) -> datetime:
    """``moment`` (aware) within earliest .. now + max_future, returned in UTC."""
    if moment.tzinfo is None:
        raise InputError(field, "needs a time zone (e.g. 2026-01-31T12:00:00Z)")
    latest = (now or clock.now()) + max_future
    # Compared before any conversion: year 1 with +01:00 is not representable in UTC.
    if moment < earliest or moment > latest:
        raise InputError(
            field, f"must lie between {earliest:%Y-%m-%d} and now + {_span(max_future)}"
        )
    return moment.astimezone(UTC)


def parse_time(raw: Any, field: str, *, now: datetime | None = None, **bounds: Any) -> datetime:
    """An ISO-8601 date-time string with an offset (or ``Z``; none given means UTC), bounded."""
    if not isinstance(raw, str):
        raise InputError(field, "must be an ISO-8601 date-time string")
    check_text(raw, field, max_length=64)
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise InputError(
            field, "must be an ISO-8601 date-time with an offset within ±24:00"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return check_time(moment, field, now=now, **bounds)


def check_number(
    value: Any, field: str, *, minimum: float = 0.0, maximum: float = MAX_DURATION_SECONDS
) -> float:
    """A finite JSON number within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(field, "must be a number")
    if not math.isfinite(value) or not minimum <= value <= maximum:
        raise InputError(field, f"must be a finite number between {minimum:g} and {maximum:g}")
    return float(value)


def check_integer(value: Any, field: str, *, minimum: int, maximum: int) -> int:
    """A JSON integer (not a bool) within [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(field, "must be an integer")
    if not minimum <= value <= maximum:
        raise InputError(field, f"must be between {minimum} and {maximum}")
    return value


def check_json_strings(value: Any, field: str = "body", depth: int = 0) -> None:
    """Every key and string in a decoded JSON document is clean; nesting is bounded."""
    if depth > MAX_JSON_DEPTH:
        raise InputError(field, f"nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise InputError(field, problem)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_json_strings(item, f"{field}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_json_strings(key, field, depth + 1)
            where = str(key) if field == "body" else f"{field}.{key}"
            check_json_strings(item, _printable(where), depth + 1)


def json_body(request: HttpRequest, *, max_bytes: int = MAX_JSON_BODY_BYTES) -> Any:
    """The request's JSON body, decoded and checked (size, syntax, strings)."""
    too_large = InputError("body", f"must be at most {max_bytes} bytes", status=413)
    if _content_length(request) > max_bytes:
        raise too_large
    raw = request.body
    if len(raw) > max_bytes:
        raise too_large
    try:
        decoded = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InputError("body", "must be valid JSON") from None
    check_json_strings(decoded)
    return decoded


def check_request_text(path: str, query: Mapping[str, list[str]]) -> None:
    """The path and every query parameter name and value are clean and bounded."""
    problem = text_problem(path)
    if problem:
        raise InputError("path", problem)
    if any(len(segment) > MAX_PARAMETER_CHARS for segment in path.split("/")):
        raise InputError("path", f"a segment is longer than {MAX_PARAMETER_CHARS} characters")
    for name, values in query.items():
        for value in (name, *values):
            problem = text_problem(value)
            if problem:
                raise InputError(_printable(name), problem)
            if len(value) > MAX_PARAMETER_CHARS:
                raise InputError(
                    _printable(name), f"must be at most {MAX_PARAMETER_CHARS} characters"
                )


def _content_length(request: HttpRequest) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _printable(name: str) -> str:
    """A parameter name safe to echo back (NUL and surrogates escaped)."""
    return ascii(name)[1:-1][:100]


def _span(delta: timedelta) -> str:
    days = delta.total_seconds() / 86400
    return f"{days:g} day" + ("" if days == 1 else "s")
