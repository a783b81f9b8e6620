"""Generic webhook: the Alertmanager v4 JSON, signed with the channel secret."""

from __future__ import annotations

import hashlib
import hmac
import json

from .base import HttpTransport
from .payloads import WebhookMessage

SIGNATURE_HEADER = "X-ClusterWatch-Signature"


def sign(body: bytes, secret: str) -> str:
    """The signature header value: ``sha256=<hex HMAC-SHA256 of the raw body>``."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


class WebhookTransport(HttpTransport):
    """POSTs the webhook v4 message as is; signs it when the channel has a secret."""

    def notify(self, message: WebhookMessage) -> int:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {SIGNATURE_HEADER: sign(body, self.target.secret)} if self.target.secret else {}
        return self.post(self.target.url, body, headers)
