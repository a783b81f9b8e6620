"""Publishing live updates to browsers through the Redis channel layer."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

LIVE_GROUP = "live"


def publish(event: Mapping[str, Any]) -> bool:
    """Send one typed event (a TypedDict with a ``type`` tag) to every connected browser.

    Live updates are best effort: a Redis hiccup is logged, never raised into
    the ingest or alert transaction that produced the event.
    """
    layer = get_channel_layer()
    if layer is None:
        return False
    try:
        async_to_sync(layer.group_send)(LIVE_GROUP, {"type": "live.event", "event": dict(event)})
    except Exception as exc:  # noqa: BLE001 - channel layer errors vary by backend
        log.warning("live publish failed: %s", exc)
        return False
    return True
