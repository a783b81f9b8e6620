"""Transport base classes: one short subclass per channel kind.

A transport turns one notification (a webhook v4 message) into one HTTP call.
It knows nothing about the database: it gets a ``ChannelTarget`` and raises
``TransportError`` when the receiver does not take the notification.
"""

from __future__ import annotations

import email.utils
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests
from django.conf import settings

from .payloads import WebhookMessage

log = logging.getLogger(__name__)

USER_AGENT = "ClusterWatch-Notifier/1"


@dataclass(frozen=True)
class ChannelTarget:
    """Where and how to deliver: the parts of a channel a transport needs."""

    name: str
    kind: str
    url: str
    secret: str = ""


class TransportError(Exception):
    """The receiver did not take the notification.

    ``permanent``: the destination is gone (404/410); the channel gets disabled.
    ``rejected``: this notification was refused for good (e.g. 400); do not retry it.
    ``retry_after``: seconds the receiver asked us to wait (429 Retry-After).
    """

    def __init__(
        self,
        message: str,
        permanent: bool = False,
        *,
        rejected: bool = False,
        retry_after: float | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.rejected = rejected or permanent
        self.retry_after = retry_after
        self.status_code = status_code


class Transport:
    """Base of all transports.

    Subclasses must implement ``notify()``; ``is_noop()`` is optional.
    """

    def __init__(self, target: ChannelTarget) -> None:
        self.target = target

    def notify(self, message: WebhookMessage) -> int:
        """Deliver ``message``; return the HTTP status code or raise ``TransportError``."""
        raise NotImplementedError

    def is_noop(self, message: WebhookMessage) -> bool:
        """True when there is nothing to send for this message (default: no alerts)."""
        return not message["alerts"]


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


class HttpTransport(Transport):
    """A transport that POSTs JSON with a fixed timeout (``HTTP_TIMEOUT_SECONDS``)."""

    def post_json(self, url: str, payload: Any, headers: dict[str, str] | None = None) -> int:
        """POST ``payload`` as compact JSON; see ``post()``."""
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        return self.post(url, body, headers or {})

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """POST raw bytes; return the status code of a 2xx answer or raise ``TransportError``."""
        timeout = float(settings.HTTP_TIMEOUT_SECONDS)
        all_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers}
        try:
            response = requests.post(
                url, data=body, headers=all_headers, timeout=timeout, allow_redirects=False
            )
        except requests.Timeout:
            raise TransportError(f"timed out after {timeout:g} s") from None
        except requests.RequestException as exc:
            raise TransportError(f"connection failed: {type(exc).__name__}") from None
        return self.check(response)

    def check(self, response: requests.Response) -> int:
        """Map an HTTP answer to success or a ``TransportError`` of the right kind."""
        code = response.status_code
        if 200 <= code < 300:
            return code
        detail = f"HTTP {code}: {response.text[:200].strip()}".rstrip(": ")
        if code == 429:
            delay = parse_retry_after(response.headers.get("Retry-After"))
            raise TransportError(detail, retry_after=delay, status_code=code)
        if code in (404, 410):
            raise TransportError(detail, permanent=True, status_code=code)
        if 400 <= code < 500 and code != 408:
            raise TransportError(detail, rejected=True, status_code=code)
        raise TransportError(detail, status_code=code)
