"""config.handler.OneHopASGIHandler: the whole sync middleware chain and the view in one hop.

Checked through the ASGI interface itself (asgiref's ApplicationCommunicator), against
Django's own ASGIHandler as the counter-example: under Django's handler the view's call
stack passes back through the event loop (``AsyncToSync``) between our outermost
middleware and the view; under ours it does not.
"""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
from asgiref.sync import AsyncToSync
from asgiref.testing import ApplicationCommunicator
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.http import HttpRequest, JsonResponse
from django.test import override_settings
from django.urls import path

from config.handler import OneHopASGIHandler

SEEN: dict[str, object] = {}


class Outermost:
    """A sync-only middleware placed before every configured one."""

    def __init__(self, get_response):  # type: ignore[no-untyped-def]
        self.get_response = get_response

    def __call__(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        return self.get_response(request)


def probe(request: HttpRequest) -> JsonResponse:
    """Which frames lie between this view and the outermost middleware."""
    frames = [info.frame for info in inspect.stack(context=0)]
    codes = [frame.f_code for frame in frames]
    SEEN["outermost_in_stack"] = Outermost.__call__.__code__ in codes
    SEEN["hops"] = sum(code is AsyncToSync.__call__.__code__ for code in codes)
    return JsonResponse({"probe": request.GET.get("q", "")}, status=201)


urlpatterns = [path("probe/", probe)]


def ask(handler: ASGIHandler, path: str, query: bytes = b"") -> tuple[int, dict, bytes]:
    """One GET through ``handler``: (status, headers, body)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
        "root_path": "", "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip

    async def run() -> tuple[int, dict, bytes]:
        communicator = ApplicationCommunicator(handler, scope)
        await communicator.send_input({"type": "http.request", "body": b""})
        start = await communicator.receive_output(5)
        body = b""
        while True:
            message = await communicator.receive_output(5)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await communicator.wait(5)
        return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body

    return asyncio.run(run())


def build(handler_class: type[ASGIHandler]) -> ASGIHandler:
    """``handler_class`` built with the probe's URLs and ``Outermost`` first."""
    with override_settings(
        ROOT_URLCONF=__name__,
        MIDDLEWARE=[f"{__name__}.Outermost", *settings.MIDDLEWARE],
        PUBLIC_PATHS=[*settings.PUBLIC_PATHS, "/probe/"],
    ):
        return handler_class()


@pytest.mark.parametrize(
    ("handler_class", "hops"), [(OneHopASGIHandler, 0), (ASGIHandler, 1)], ids=["one-hop", "django"]
)
def test_the_view_runs_inside_the_middleware_call_without_a_hop(handler_class, hops) -> None:
    SEEN.clear()
    with override_settings(ROOT_URLCONF=__name__):
        status, headers, body = ask(build(handler_class), "/probe/", b"q=x")
    assert (status, headers["Content-Type"], json.loads(body)) == (
        201, "application/json", {"probe": "x"},
    )  # fmt: skip
    assert SEEN == {"outermost_in_stack": True, "hops": hops}


def test_the_deployed_application_uses_it_with_a_synchronous_chain() -> None:
    import config.asgi

    handler = config.asgi.application.application_mapping["http"]
    assert type(handler) is OneHopASGIHandler
    assert not asyncio.iscoroutinefunction(handler._middleware_chain)


def test_the_configured_middleware_still_answer() -> None:
    """Login required: the API answers 401 JSON, a page redirects to the login page."""
    handler = OneHopASGIHandler()
    status, headers, body = ask(handler, "/api/v1/overview")
    assert (status, json.loads(body)["error"], headers["WWW-Authenticate"]) == (
        401, "unauthorized", 'Bearer realm="api"',
    )  # fmt: skip
    status, headers, _ = ask(handler, "/nodes/")
    assert (status, headers["Location"]) == (302, "/accounts/login/?next=/nodes/")
