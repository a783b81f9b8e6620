"""Typed environment helpers.

Every setting is read from the environment through these helpers. A bad value
never crashes the import of settings: the helper returns the default and records
the problem, and the ``core`` system check (``core.checks``) turns the recorded
problems into errors that stop ``manage.py check``, the web server and workers.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

ERRORS: list[str] = []
#: Settings that work but are unwise (credentials in a URL): logged at start-up, ``manage.py check``.
WARNINGS: list[str] = []

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def _fail(name: str, value: str, why: str) -> None:
    ERRORS.append(f"{name}={value!r}: {why}")


def env_str(name: str, default: str) -> str:
    """A string setting."""
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    """A boolean setting: 1/0, true/false, yes/no, on/off."""
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    _fail(name, value, "expected one of true/false, 1/0, yes/no, on/off")
    return default


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    """An integer setting, optionally with a lower bound."""
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        _fail(name, value, "expected an integer")
        return default
    if minimum is not None and number < minimum:
        _fail(name, value, f"must be at least {minimum}")
        return default
    return number


def env_float(name: str, default: float, minimum: float | None = None) -> float:
    """A float setting, optionally with a lower bound."""
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        _fail(name, value, "expected a number")
        return default
    if number != number or (minimum is not None and number < minimum):
        _fail(name, value, f"must be a number of at least {minimum}")
        return default
    return number


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """A setting that must be one of ``choices`` (compared lower-cased)."""
    value = env_str(name, default).lower()
    if value not in choices:
        _fail(name, value, f"expected one of {', '.join(choices)}")
        return default
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list setting."""
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int_list(name: str, default: list[int], length: int, minimum: int = 0) -> list[int]:
    """``length`` comma-separated integers, each at least ``minimum``."""
    items = env_list(name, [str(value) for value in default])
    try:
        values = [int(item) for item in items]
    except ValueError:
        values = []
    if len(values) != length or any(value < minimum for value in values):
        _fail(name, ",".join(items), f"expected {length} integers >= {minimum}, e.g. "
              + ",".join(str(value) for value in default))  # fmt: skip
        return list(default)
    return values


def env_mapping(name: str, default: dict[str, str]) -> dict[str, str]:
    """``Key=value`` pairs separated by commas, e.g. ``X-Scope-OrgID=team-a,X-Other=1``."""
    value = _raw(name)
    if value is None or value == "":
        return dict(default)
    mapping: dict[str, str] = {}
    for pair in value.split(","):
        key, sep, item = pair.partition("=")
        if not sep or not key.strip():
            _fail(name, value, "expected Key=value pairs separated by commas")
            return dict(default)
        mapping[key.strip()] = item.strip()
    return mapping


_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def env_namespace_teams(name: str, default: dict[str, str]) -> dict[str, str]:
    """``namespace=team`` pairs separated by commas, e.g. ``llm-pretrain=ml-infra,vision=cv``.

    Namespaces must be Kubernetes namespace names (RFC 1123 labels); a team is any
    non-empty text without ``,`` or ``=`` (at most 128 characters).
    """
    mapping = env_mapping(name, default)
    for namespace, team in mapping.items():
        if not _NAMESPACE.fullmatch(namespace):
            _fail(name, _raw(name) or "", f"{namespace!r} is not a Kubernetes namespace name")
            return dict(default)
        if not team or len(team) > 128:
            _fail(name, _raw(name) or "", f"{namespace!r}: expected a team of 1..128 characters")
            return dict(default)
    return mapping


def env_json_object(name: str, default: dict[str, str]) -> dict[str, str]:
    """A JSON object of strings, e.g. ``{"team-a/pretrain": "cq-pretrain"}``."""
    import json

    value = _raw(name)
    if value is None or value == "":
        return dict(default)
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
        _fail(name, value, 'expected a JSON object of strings, e.g. {"key": "value"}')
        return dict(default)
    return {str(k): v for k, v in parsed.items()}


def env_url(name: str, default: str, schemes: tuple[str, ...]) -> str:
    """A URL setting whose scheme must be one of ``schemes``."""
    value = env_str(name, default)
    return _checked_url(name, value, default, schemes)


def env_url_list(name: str, schemes: tuple[str, ...]) -> list[str]:
    """A comma-separated list of URLs (each as ``env_url`` checks it); [] when unset or empty."""
    urls = [_checked_url(name, item, "", schemes) for item in env_list(name, [])]
    return [url for url in urls if url]


def _checked_url(name: str, value: str, default: str, schemes: tuple[str, ...]) -> str:
    parts = urlsplit(value)
    if parts.scheme not in schemes or not parts.hostname:
        _fail(name, value, f"expected a URL like {schemes[0]}://host:port/...")
        return default
    try:
        parts.port  # noqa: B018 - validates the port number
    except ValueError:
        _fail(name, value, "the port is not a number between 0 and 65535")
        return default
    return value


def env_secret_url(name: str, schemes: tuple[str, ...] = ("https", "http")) -> str:
    """An optional URL that is itself a secret (a heartbeat or webhook URL): "" when unset.

    A bad value is reported by its scheme and host only, never in full.
    """
    value = env_str(name, "")
    if not value:
        return ""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - validates the port number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in schemes or not parts.hostname:
        shape = f"{parts.scheme}://{parts.hostname or ''}/…" if parts else "(unparseable)"
        ERRORS.append(f"{name}={shape}: expected a URL like {schemes[0]}://host/path")
        return ""
    return value


def env_networks(name: str, default: list[str]) -> list[str]:
    """A comma-separated list of IP addresses or CIDR networks."""
    networks = env_list(name, default)
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            _fail(name, network, "not an IP address or CIDR network")
            return list(default)
    return networks


def env_timezone(name: str, default: str) -> str:
    """An IANA time zone name."""
    import zoneinfo

    value = env_str(name, default)
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        _fail(name, value, "unknown time zone (expected an IANA name such as UTC or Europe/Paris)")
        return default
    return value


@dataclass(frozen=True)
class Database:
    """The parts of a postgres:// URL Django needs."""

    name: str
    user: str
    password: str
    host: str
    port: int


def env_database(name: str, default: str) -> Database:
    """A ``postgres://user:password@host:port/name`` URL."""
    url = env_url(name, default, ("postgres", "postgresql"))
    parts = urlsplit(url)
    database = parts.path.lstrip("/")
    if not database:
        _fail(name, url, "the URL names no database (…/DBNAME)")
        parts, database = urlsplit(default), urlsplit(default).path.lstrip("/")
    return Database(
        name=unquote(database),
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
    )
