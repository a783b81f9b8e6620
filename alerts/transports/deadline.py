"""One HTTP request under a deadline for the whole request: connect, send and read together.

``requests`` (and urllib3's ``total``) bound each socket operation, so a receiver
that trickles one byte per second keeps a sender forever. Here a timer shuts the
socket down when the deadline passes, whatever the request is doing, and the
blocked read fails at once. Redirects are never followed (http.client does not).
``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` are honoured, as ``requests`` did.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

MAX_ANSWER_BYTES = 64 * 1024  # the receiver's answer is only logged


class DeadlineExceeded(Exception):
    """The request did not finish before its deadline."""


class ConnectionFailed(Exception):
    """The receiver could not be reached, or the connection broke."""


@dataclass(frozen=True)
class Answer:
    """A receiver's answer: status, headers (lower-case names) and the start of the body."""

    status: int
    headers: dict[str, str]
    text: str


def proxy_for(url: str) -> str:
    """The proxy ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` name for ``url`` ('' for none)."""
    parts = urlsplit(url)
    if proxy_bypass(parts.hostname or ""):
        return ""
    return getproxies().get(parts.scheme, "")


def _connection(url: str, deadline: float, ca_bundle: str) -> http.client.HTTPConnection:
    parts, proxy = urlsplit(url), urlsplit(proxy_for(url))
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=ca_bundle or None)
        if not proxy.hostname:
            return http.client.HTTPSConnection(host, port, timeout=deadline, context=context)
        connection = http.client.HTTPSConnection(
            proxy.hostname, proxy.port, timeout=deadline, context=context
        )
        connection.set_tunnel(host, port)  # CONNECT through the proxy, TLS to the host
        return connection
    if proxy.hostname:
        return http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=deadline)
    return http.client.HTTPConnection(host, port, timeout=deadline)


def _target(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "http" and proxy_for(url):
        return url  # a plain-HTTP proxy takes the absolute URL
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _cut_off(connection: http.client.HTTPConnection, fired: threading.Event) -> None:
    fired.set()
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


def request(
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    deadline: float,
    ca_bundle: str = "",
) -> Answer:
    """Send one request; the whole exchange ends after ``deadline`` seconds.

    Raises ``DeadlineExceeded`` or ``ConnectionFailed``; any HTTP status is an ``Answer``.
    """
    connection = _connection(url, deadline, ca_bundle)
    fired = threading.Event()
    timer = threading.Timer(deadline, _cut_off, (connection, fired))
    timer.daemon = True
    started = time.monotonic()
    timer.start()
    try:
        connection.request(method, _target(url), body=body, headers=headers)
        response = connection.getresponse()
        text = response.read(MAX_ANSWER_BYTES).decode("utf-8", "replace")
        answer = Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, text)
    except (OSError, http.client.HTTPException) as exc:
        if fired.is_set() or isinstance(exc, TimeoutError | socket.timeout):
            raise DeadlineExceeded(f"{time.monotonic() - started:.1f} s") from None
        raise ConnectionFailed(type(exc).__name__) from None
    finally:
        timer.cancel()
        connection.close()
    return answer  # complete: taken even if the deadline passed as it arrived
