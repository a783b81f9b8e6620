"""Readiness of each component the app depends on."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
import requests
from django.conf import settings
from django.db import connection
from django.utils.module_loading import import_string

from .secrets import redact_text


@dataclass
class ComponentStatus:
    """The state of one dependency as reported by /readyz."""

    name: str
    ok: bool
    detail: str = ""
    latency_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _timed(name: str, probe: Any) -> ComponentStatus:
    started = time.perf_counter()
    try:
        detail = probe()
        ok = True
    except Exception as exc:  # noqa: BLE001 - any failure means "down", reported with its message
        # /readyz is public: a URL in the message (requests names it) loses its credentials.
        detail, ok = redact_text(f"{type(exc).__name__}: {exc}"), False
    return ComponentStatus(name, ok, detail or "", round((time.perf_counter() - started) * 1000, 1))


def check_postgres() -> ComponentStatus:
    """Postgres answers a trivial query."""

    def probe() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"

    return _timed("postgres", probe)


def check_redis() -> ComponentStatus:
    """Redis answers PING."""

    def probe() -> str:
        timeout = settings.READYZ_TIMEOUT_SECONDS
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout
        )
        try:
            client.ping()
        finally:
            client.close()
        return "ok"

    return _timed("redis", probe)


def check_prometheus() -> ComponentStatus:
    """Prometheus reports ready."""

    def probe() -> str:
        url = settings.PROMETHEUS_URL.rstrip("/") + "/-/ready"
        response = requests.get(url, timeout=settings.READYZ_TIMEOUT_SECONDS)
        response.raise_for_status()
        return "ok"

    return _timed("prometheus", probe)


def check_names() -> dict[str, str]:
    """Each configured check by its short name (``core.health.check_redis`` → ``redis``)."""
    return {
        path.rsplit(".", 1)[-1].removeprefix("check_"): path for path in settings.READINESS_CHECKS
    }


def readiness(only: Iterable[str] | None = None) -> tuple[bool, list[dict[str, Any]]]:
    """Run every configured check (or those named in ``only``); ready only if all are ok."""
    names = check_names()
    paths = list(names.values()) if only is None else [names[name] for name in only]
    statuses = [import_string(path)() for path in paths]
    return all(status.ok for status in statuses), [asdict(status) for status in statuses]
