"""Credentials never shown: URLs and messages with their userinfo removed, secrets masked."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

#: ``scheme://user:password@`` (or ``scheme://token@``) anywhere in a text.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]+)@")
MASK = "••••••"


def redact_url(url: str) -> str:
    """``url`` without its user and password (``https://***@host/path`` keeps the shape)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def redact_text(text: str) -> str:
    """Every URL's userinfo in ``text`` replaced by ``***`` (exception messages, last_error)."""
    return _USERINFO.sub(lambda match: f"{match['scheme']}***@", text)


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user or password."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.username is not None or parts.password is not None


def mask(secret: str, shown: int = 4) -> str:
    """A saved secret as the admin shows it: only its last few characters (none if short)."""
    if not secret:
        return ""
    tail = secret[-shown:] if len(secret) >= 4 * shown else ""
    return f"{MASK}{tail}"


def url_shape(url: str) -> str:
    """``https://hc-ping.com/…9f3c``: scheme and host only, for URLs whose path is the secret.

    A heartbeat (healthchecks-style) or incoming-webhook URL carries its token in the path,
    so :func:`redact_url` is not enough; this keeps only enough to recognise it.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return MASK
    return f"{parts.scheme}://{host}{port}/…{url[-4:]}" if len(url) >= 16 else MASK
