"""Reading one Prometheus answer within a deadline and a size cap; Prometheus' own error messages.

``PrometheusClient`` (``ingest.prometheus``) sends every request through here. The
per-socket timeout (PROMETHEUS_TIMEOUT_SECONDS) only bounds the wait for each
packet: an answer dripped one byte at a time never trips it. So the body is read
as it arrives (``read1``) and the whole request must finish within
PROMETHEUS_DEADLINE_SECONDS (the status line and headers are bounded by the
socket timeout alone: ``requests`` returns control only after them); an answer larger than PROMETHEUS_MAX_ANSWER_BYTES
is abandoned before it is loaded (``AnswerTooLarge``; range queries split the window).
"""

from __future__ import annotations

import time

import orjson
import requests

from core.secrets import redact_text

READ_SIZE = 1 << 16


class DeadlineExceeded(Exception):
    """The whole request took longer than its deadline."""


class TooLarge(Exception):
    """The answer is larger than the cap."""


def read_body(response: requests.Response, deadline: float, max_bytes: int) -> bytes:
    """The body of a streamed response, read until ``deadline`` (monotonic) and ``max_bytes``."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(f"{int(declared)} bytes announced")
    parts: list[bytes] = []
    size = 0
    raw = response.raw
    while True:
        if time.monotonic() > deadline:
            raise DeadlineExceeded(f"{size} bytes read")
        part = raw.read1(READ_SIZE, decode_content=True)  # max_bytes bounds the decoded size
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > max_bytes:
            raise TooLarge(f"more than {max_bytes} bytes")
        parts.append(part)


def error_message(status: int, body: bytes) -> str:
    """What a non-200 or ``"status": "error"`` answer says, Prometheus' own words first."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return f"HTTP {status}: {redact_text(body[:300].decode('utf-8', 'replace'))}"
    return f"HTTP {status}: {prometheus_error(decoded)}"


def prometheus_error(decoded: object) -> str:
    """``errorType: error`` of a Prometheus error document (the API's ``status: error``)."""
    if not isinstance(decoded, dict):
        return "answer is not a JSON object"
    kind, text = decoded.get("errorType", "error"), decoded.get("error", "")
    return redact_text(f"Prometheus {kind}: {str(text)[:500]}")
