"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os

from config.handler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from core.checks import stop_on_configuration_errors  # noqa: E402
from dashboard.warmup import warm_up  # noqa: E402

stop_on_configuration_errors()
# Each web worker process starts here: build what its first pages would otherwise build.
warm_up()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)
