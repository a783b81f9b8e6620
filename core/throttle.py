"""Throttles in the cache (Redis): failed logins per username and per IP, API calls per token.

Logins: more than LOGIN_MAX_FAILURES failed attempts for one username (or
LOGIN_MAX_FAILURES_PER_IP from one client address, REMOTE_ADDR) within
LOGIN_WINDOW_SECONDS lock that username (or address) until the oldest failure
leaves the window. A locked attempt is refused before the password is hashed, so
a guessing run costs no CPU. Both login pages (``/accounts/login/`` and
``/admin/login/``) use ``ThrottledAuthenticationForm``.

API tokens: at most API_TOKEN_RATE_PER_MINUTE requests per token per clock
minute, then 429 with ``Retry-After``.

A cache outage never locks anyone out: the throttle then lets attempts through.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time

from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from prometheus_client import Counter

from .metrics import REGISTRY

log = logging.getLogger(__name__)
LOGIN_THROTTLED = Counter(
    "clusterwatch_login_throttled_total",
    "Login attempts refused by the throttle (before any password hashing), by what was locked.",
    ["scope"],
    registry=REGISTRY,
)
LOGIN_FAILURES = Counter(
    "clusterwatch_login_failures_total",
    "Failed login attempts (wrong username or password).",
    registry=REGISTRY,
)
API_THROTTLED = Counter(
    "clusterwatch_api_throttled_total",
    "API requests answered 429 because their token passed API_TOKEN_RATE_PER_MINUTE.",
    registry=REGISTRY,
)


def now() -> float:
    """The throttle's clock (tests pin it)."""
    return time.time()


def _key(scope: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "backslashreplace")).hexdigest()[:32]
    return f"throttle:login:{scope}:{digest}"


def _failures(key: str, at: float) -> list[float]:
    try:
        stamps = cache.get(key) or []
    except Exception:  # noqa: BLE001 - a cache outage must not lock everyone out
        return []
    return [t for t in stamps if t > at - settings.LOGIN_WINDOW_SECONDS]


def _scopes(username: str, address: str) -> list[tuple[str, str, int]]:
    return [
        ("username", username.strip().lower(), settings.LOGIN_MAX_FAILURES),
        ("ip", address, settings.LOGIN_MAX_FAILURES_PER_IP),
    ]


def login_retry_after(username: str, address: str) -> int | None:
    """Seconds until a login for ``username`` from ``address`` may be tried again (None: now)."""
    at = now()
    for scope, value, limit in _scopes(username, address):
        stamps = _failures(_key(scope, value), at)
        if len(stamps) >= limit:
            LOGIN_THROTTLED.labels(scope).inc()
            oldest = sorted(stamps)[-limit]
            return max(1, math.ceil(oldest + settings.LOGIN_WINDOW_SECONDS - at))
    return None


def record_login_failure(username: str, address: str) -> None:
    """Count one failed attempt against the username and the address."""
    LOGIN_FAILURES.inc()
    at = now()
    for scope, value, limit in _scopes(username, address):
        key = _key(scope, value)
        stamps = [*_failures(key, at), at][-limit:]
        try:
            cache.set(key, stamps, math.ceil(settings.LOGIN_WINDOW_SECONDS) + 1)
        except Exception as exc:  # noqa: BLE001
            log.warning("login throttle not recorded: %s", exc)


THROTTLED = "Too many failed login attempts. Try again in %(seconds)d seconds."


class ThrottleMixin:
    """For Django's login forms: refuse a locked username or address before authenticating."""

    request: object
    cleaned_data: dict[str, object]
    throttled_for: int | None = None

    def _address(self) -> str:
        request = self.request
        return request.META.get("REMOTE_ADDR", "") if request is not None else ""  # type: ignore[attr-defined]

    def clean(self) -> dict[str, object]:
        username = str(self.cleaned_data.get("username") or "")
        address = self._address()
        wait = login_retry_after(username, address)
        self.throttled_for = wait  # the login template says so in words
        if wait is not None:
            raise forms.ValidationError(THROTTLED, code="throttled", params={"seconds": wait})
        try:
            return super().clean()
        except forms.ValidationError as exc:
            if exc.code == "invalid_login":
                record_login_failure(username, address)
            raise


class ThrottledAuthenticationForm(ThrottleMixin, AuthenticationForm):
    """``/accounts/login/``."""


class ThrottledAdminAuthenticationForm(ThrottleMixin, AdminAuthenticationForm):
    """``/admin/login/`` (staff only, as Django's admin form)."""


def api_retry_after(token_id: int) -> int | None:
    """Count one request of the token; seconds until the next minute if over the rate, else None."""
    rate = settings.API_TOKEN_RATE_PER_MINUTE
    if rate <= 0:
        return None
    at = now()
    minute = int(at // 60)
    key = f"throttle:api:{token_id}:{minute}"
    try:
        cache.add(key, 0, 120)
        count = cache.incr(key)
    except Exception:  # noqa: BLE001 - a cache outage must not stop the API
        return None
    if count <= rate:
        return None
    API_THROTTLED.inc()
    return max(1, math.ceil((minute + 1) * 60 - at))
