"""Generic webhook: the Alertmanager v4 JSON, with a delivery id, signed with the channel secret.

Signature (docs/alerts.md "Channels"): ``X-ClusterWatch-Webhook-Signature:
t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``. A receiver recomputes
it and refuses a ``t`` older than ``ALERTS_NOTIFY_SIGNATURE_TOLERANCE_SECONDS``, so
a captured request cannot be replayed later. The untimed ``X-ClusterWatch-Signature:
sha256=<hex HMAC of the body>`` is still sent for one release.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from django.conf import settings

from .base import HttpTransport, json_body
from .payloads import WebhookMessage

SIGNATURE_HEADER = "X-ClusterWatch-Webhook-Signature"
LEGACY_SIGNATURE_HEADER = "X-ClusterWatch-Signature"  # deprecated: removed in the next release
DELIVERY_HEADER = "X-ClusterWatch-Delivery"


def _hmac(secret: str, data: bytes) -> str:
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def sign(body: bytes, secret: str, timestamp: int) -> str:
    """The signature header value: ``t=<timestamp>,v1=<hex HMAC of "t.body">``."""
    return f"t={timestamp},v1={_hmac(secret, str(timestamp).encode() + b'.' + body)}"


def legacy_sign(body: bytes, secret: str) -> str:
    """The deprecated header value: ``sha256=<hex HMAC-SHA256 of the raw body>``."""
    return f"sha256={_hmac(secret, body)}"


def verify(
    header: str, body: bytes, secret: str, now: float | None = None, tolerance: int | None = None
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` and is at most ``tolerance`` s old."""
    tolerance = (
        settings.ALERTS_NOTIFY_SIGNATURE_TOLERANCE_SECONDS if tolerance is None else tolerance
    )
    parts = dict(item.partition("=")[::2] for item in header.split(","))
    if not parts.get("t", "").isdigit() or "v1" not in parts:
        return False
    timestamp = int(parts["t"])
    if abs((time.time() if now is None else now) - timestamp) > tolerance:
        return False
    return hmac.compare_digest(sign(body, secret, timestamp), f"t={timestamp},v1={parts['v1']}")


class WebhookTransport(HttpTransport):
    """POSTs the webhook v4 message as is; signs it (fresh ``t`` per attempt) when there is a secret."""

    def notify(self, message: WebhookMessage, delivery_id: str = "") -> int:
        body = json_body(message)
        headers = {DELIVERY_HEADER: delivery_id} if delivery_id else {}
        if secret := self.target.secret:
            headers[SIGNATURE_HEADER] = sign(body, secret, int(time.time()))
            headers[LEGACY_SIGNATURE_HEADER] = legacy_sign(body, secret)
        return self.post(self.target.url, body, headers)
