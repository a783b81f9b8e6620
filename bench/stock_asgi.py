"""``config.asgi``'s application with Django's own ``ASGIHandler`` for HTTP.

bench_load's reference for ``config.handler.OneHopASGIHandler``: the same websocket
routing, warm-up and settings, only the HTTP handler differs.
"""

from __future__ import annotations

from channels.routing import ProtocolTypeRouter
from django.core.handlers.asgi import ASGIHandler

import config.asgi

application = ProtocolTypeRouter(
    {"http": ASGIHandler(), "websocket": config.asgi.application.application_mapping["websocket"]}
)
