"""Notification transports: one short class per channel kind."""

from __future__ import annotations

from .alertmanager import AlertmanagerTransport
from .base import ChannelTarget, HttpTransport, Transport, TransportError
from .email import EmailTransport
from .pagerduty import PagerDutyTransport
from .slack import SlackTransport
from .webhook import WebhookTransport

TRANSPORTS: dict[str, type[Transport]] = {
    "slack": SlackTransport,
    "webhook": WebhookTransport,
    "alertmanager": AlertmanagerTransport,
    "pagerduty": PagerDutyTransport,
    "email": EmailTransport,
}


def transport_for(target: ChannelTarget) -> Transport:
    """The transport for a channel's kind."""
    return TRANSPORTS[target.kind](target)


__all__ = [
    "ChannelTarget",
    "HttpTransport",
    "Transport",
    "TransportError",
    "transport_for",
]
