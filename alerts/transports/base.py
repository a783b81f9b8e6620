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

from django.conf import settings

from . import deadline as wire
from .deadline import Answer
from .payloads import WebhookMessage

log = logging.getLogger(__name__)

USER_AGENT = "ClusterWatch-Notifier/1"
ANSWER_LOGGED = 500  # characters of a receiver's answer kept in the delivery log
GONE_HINT = "the destination is gone; fix the URL and re-enable."
REDIRECT_HINT = (
    "the destination redirects elsewhere; put the final URL in the channel and re-enable."
)


@dataclass(frozen=True)
class ChannelTarget:
    """Where and how to deliver: the parts of a channel a transport needs."""

    name: str
    kind: str
    url: str
    secret: str = ""
    recipients: tuple[str, ...] = ()  # email channels


class TransportError(Exception):
    """The receiver did not take the notification.

    ``permanent``: the destination is gone (404/410) or moved (3xx); the channel gets
    disabled, with ``disable_hint`` saying what to do.
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
        disable_hint: str = GONE_HINT,
    ) -> None:
        super().__init__(message)
        self.disable_hint = disable_hint
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
        self.last_answer = ""  # the start of the receiver's last answer, for the delivery log

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        """Deliver ``message``; return the HTTP status code or raise ``TransportError``.

        ``delivery_id`` is the same on every attempt of one notification. Mandatory.
        """
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
    """A transport that POSTs JSON under a deadline for the whole request (``HTTP_TIMEOUT_SECONDS``).

    Override points: ``request_headers()`` (auth), ``ca_bundle()`` (TLS trust).
    """

    def request_headers(self) -> dict[str, str]:
        """Headers every request of this transport carries (default: none)."""
        return {}

    def ca_bundle(self) -> str:
        """A CA bundle file to verify TLS with (default: the system's)."""
        return ""

    def post_json(self, url: str, payload: Any, headers: dict[str, str] | None = None) -> int:
        """POST ``payload`` as compact JSON; see ``post()``."""
        return self.post(url, json_body(payload), headers or {})

    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        """POST raw bytes; return the status code of a 2xx answer or raise ``TransportError``."""
        return self.check(self.send(url, body, headers))

    def send(self, url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> Answer:
        """One request under the deadline; any answer is returned, a failure raises."""
        deadline = float(settings.HTTP_TIMEOUT_SECONDS)
        all_headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        all_headers |= self.request_headers() | headers
        try:
            answer = wire.request(method, url, body, all_headers, deadline, self.ca_bundle())
        except wire.DeadlineExceeded:
            raise TransportError(f"timed out after {deadline:g} s (whole request)") from None
        except wire.ConnectionFailed as exc:
            raise TransportError(f"connection failed: {exc}") from None
        self.last_answer = answer.text[:ANSWER_LOGGED]
        return answer

    def check(self, answer: Answer) -> int:
        """Map an HTTP answer to success or a ``TransportError`` of the right kind."""
        code = answer.status
        if 200 <= code < 300:
            return code
        detail = f"HTTP {code}: {answer.text[:200].strip()}".rstrip(": ")
        if 300 <= code < 400:
            where = answer.headers.get("location", "(no Location)")
            raise TransportError(
                f"HTTP {code}: redirects to {where[:300]}; redirects are not followed",
                permanent=True,
                status_code=code,
                disable_hint=REDIRECT_HINT,
            )
        if code == 429:
            delay = parse_retry_after(answer.headers.get("retry-after"))
            raise TransportError(detail, retry_after=delay, status_code=code)
        if code in (404, 410):
            raise TransportError(detail, permanent=True, status_code=code)
        if 400 <= code < 500 and code != 408:
            raise TransportError(detail, rejected=True, status_code=code)
        raise TransportError(detail, status_code=code)


def json_body(payload: Any) -> bytes:
    """Compact UTF-8 JSON, as every transport sends it."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
