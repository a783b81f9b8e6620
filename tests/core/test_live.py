"""The live websocket on the real ASGI server: logged-in browsers receive what is published."""

from __future__ import annotations

import json

import pytest
import requests
from django.conf import settings
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from core.live import publish
from tests.support.processes import AsgiServer

pytestmark = pytest.mark.django_db(transaction=True)


def _open_live(server: AsgiServer, cookie: str = "") -> ClientConnection:
    headers = {"Origin": server.url, **({"Cookie": cookie} if cookie else {})}
    return connect(f"{server.ws_url}/ws/live/", additional_headers=headers, open_timeout=10)


def _session_cookie(client: Client) -> str:
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}"


def test_logged_in_websocket_receives_a_published_event(
    asgi_server: AsgiServer, logged_in_client: Client
) -> None:
    with _open_live(asgi_server, _session_cookie(logged_in_client)) as socket:
        assert json.loads(socket.recv(timeout=10)) == {"type": "hello", "user": "alice"}

        assert publish({"type": "test.ping", "sequence": 1}) is True

        assert json.loads(socket.recv(timeout=10)) == {"type": "test.ping", "sequence": 1}


def test_websocket_after_a_real_login_post_is_accepted(
    asgi_server: AsgiServer, user: object, password: str
) -> None:
    browser = Client()
    response = browser.post("/accounts/login/", {"username": "alice", "password": password})
    assert response.status_code == 302

    with _open_live(asgi_server, _session_cookie(browser)) as socket:
        assert json.loads(socket.recv(timeout=10)) == {"type": "hello", "user": "alice"}


def test_anonymous_websocket_is_refused(asgi_server: AsgiServer) -> None:
    with pytest.raises(InvalidStatus) as refused:
        _open_live(asgi_server)

    assert refused.value.response.status_code == 403


def test_websocket_from_a_foreign_origin_is_refused(
    asgi_server: AsgiServer, logged_in_client: Client
) -> None:
    headers = {"Origin": "http://evil.example", "Cookie": _session_cookie(logged_in_client)}
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{asgi_server.ws_url}/ws/live/", additional_headers=headers, open_timeout=10)

    assert refused.value.response.status_code == 403


def test_asgi_server_serves_pages_and_static_files(asgi_server: AsgiServer) -> None:
    login = requests.get(f"{asgi_server.url}/accounts/login/", timeout=10)
    plotly = requests.get(f"{asgi_server.url}/static/vendor/plotly/plotly.min.js", timeout=10)

    assert login.status_code == 200
    assert "<h1>Log in to ClusterWatch</h1>" in login.text
    assert plotly.status_code == 200
    assert plotly.text.startswith("/**\n* plotly.js v")
