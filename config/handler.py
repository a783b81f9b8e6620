"""Django's ASGI handler with the request's sync work done in one thread hop.

Django's own ``ASGIHandler`` builds the middleware chain in async mode. Our
middleware and views are synchronous, so each request crossed between the event
loop and its thread several times: every ``MiddlewareMixin`` step, the adapters
around our own middleware, and the view itself. py-spy on a web worker showed the
crossings (``SyncToAsync``/``AsyncToSync``) and the waits for them taking a large
part of a cheap JSON request. ``OneHopASGIHandler`` builds the chain as WSGI does
(``is_async=False``) and runs the whole chain, the view included, in one
``sync_to_async`` call, on the request's thread-sensitive thread. Everything else is
Django's: reading the body, the request signals, streaming the response, and
cancelling on client disconnect.
"""

from __future__ import annotations

import django
from asgiref.sync import sync_to_async
from django.core.handlers import base
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, HttpResponseBase


class OneHopASGIHandler(ASGIHandler):
    """``ASGIHandler`` whose middleware chain and view run synchronously, in one hop."""

    def __init__(self) -> None:
        base.BaseHandler.__init__(self)
        self.load_middleware(is_async=False)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


def get_asgi_application() -> OneHopASGIHandler:
    """Set Django up and return the handler (as ``django.core.asgi.get_asgi_application``)."""
    django.setup(set_prefix=False)
    return OneHopASGIHandler()
