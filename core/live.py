"""Publishing live updates to browsers through the Redis channel layer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

log = logging.getLogger(__name__)

LIVE_GROUP = "live"


def _inside_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def publish(event: Mapping[str, Any]) -> bool:
    """Send one typed event (a TypedDict with a ``type`` tag) to every connected browser.

    Live updates are best effort: a Redis hiccup is logged, never raised into
    the ingest or alert transaction that produced the event.
    """
    layer = get_channel_layer()
    if layer is None:
        return False
    send = async_to_sync(layer.group_send)
    message = {"type": "live.event", "event": dict(event)}
    try:
        if _inside_event_loop():
            # Called from a thread that runs an event loop (async code, a browser-test
            # harness): async_to_sync refuses to block it, so send from a helper thread.
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(send, LIVE_GROUP, message).result(timeout=10)
        else:
            send(LIVE_GROUP, message)
    except Exception as exc:  # noqa: BLE001 - channel layer errors vary by backend
        log.warning("live publish failed: %s", exc)
        return False
    return True
