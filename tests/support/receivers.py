"""Local HTTP receivers for notification tests, and a real Alertmanager.

A ``Receiver`` listens on 127.0.0.1 on a free port, answers each request with
the next scripted ``Reply`` (the last one repeats), and records every request
with its headers, body and arrival time.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

from tests.support.processes import RunningProcess, free_port, run_process


@dataclass(frozen=True)
class Reply:
    """One scripted answer: status, headers, body, and a delay before answering."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = "ok"
    delay: float = 0.0
    trickle: float = 0.0  # > 0: the whole answer, status line included, one byte every this many s


OK = Reply()
SERVER_ERROR = Reply(500, body="internal error")
GONE = Reply(404, body="no_service")


def rate_limited(retry_after: int) -> Reply:
    """A 429 answer asking to wait ``retry_after`` seconds."""
    return Reply(429, {"Retry-After": str(retry_after)}, "rate_limited")


def slow(seconds: float) -> Reply:
    """A 200 answer that comes after ``seconds``."""
    return Reply(delay=seconds)


def rate_limited_until(http_date: str) -> Reply:
    """A 429 answer whose Retry-After is an HTTP date."""
    return Reply(429, {"Retry-After": http_date}, "rate_limited")


def redirect(status: int, location: str) -> Reply:
    """A 3xx answer pointing elsewhere."""
    return Reply(status, {"Location": location}, "moved")


def trickle(seconds_per_byte: float, body: str = "ok") -> Reply:
    """A 200 answer sent one byte at a time, ``seconds_per_byte`` apart."""
    return Reply(body=body, trickle=seconds_per_byte)


@dataclass(frozen=True)
class Request:
    """One recorded request."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


class Receiver:
    """A scripted HTTP server; use ``start_receiver()``."""

    def __init__(self, replies: list[Reply], tls: tuple[Path, Path] | None = None) -> None:
        self.replies = list(replies) or [OK]
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.scheme = "https" if tls else "http"
        if tls:  # (certificate, key) PEM files: serve HTTPS
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:40123``."""
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def _next_reply(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    "POST", self.path, dict(self.headers), self.rfile.read(length), time.monotonic()
                )
                reply = receiver._next_reply(request)
                time.sleep(reply.delay)
                body = reply.body.encode()
                if reply.trickle:
                    self._trickle(reply, body)
                    return
                try:
                    self.send_response(reply.status)
                    for name, value in {**reply.headers, "Content-Length": str(len(body))}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def _trickle(self, reply: Reply, body: bytes) -> None:
                head = f"HTTP/1.1 {reply.status} OK\r\nContent-Length: {len(body)}\r\n\r\n"
                try:
                    for byte in head.encode() + body:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up at its deadline
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler


STARTED: list[Receiver] = []  # every receiver started, for checks at a test's teardown


@contextmanager
def start_receiver(*replies: Reply, tls: tuple[Path, Path] | None = None) -> Iterator[Receiver]:
    """Run a receiver for the duration of the block; it answers ``replies`` in order."""
    receiver = Receiver(list(replies), tls)
    STARTED.append(receiver)
    thread = threading.Thread(target=receiver.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.server.shutdown()
        receiver.server.server_close()
        thread.join(timeout=5)


ALERTMANAGER_BINARY = "/usr/bin/prometheus-alertmanager"
ALERTMANAGER_CONFIG = 'route:\n  receiver: "null"\nreceivers:\n  - name: "null"\n'


@dataclass
class Alertmanager:
    """A running Alertmanager started by a test."""

    process: RunningProcess
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def alerts(self) -> list[dict[str, Any]]:
        """What ``GET /api/v2/alerts`` answers (active, unresolved alerts)."""
        response = requests.get(self.url + "/api/v2/alerts", timeout=5)
        response.raise_for_status()
        return response.json()

    def silences(self) -> list[dict[str, Any]]:
        """What ``GET /api/v2/silences`` answers (every silence, expired ones included)."""
        response = requests.get(self.url + "/api/v2/silences", timeout=5)
        response.raise_for_status()
        return response.json()

    def amtool(self, *args: str) -> Any:
        """Run ``amtool <args> -o json`` against this Alertmanager; its parsed output."""
        argv = ["amtool", *args, "-o", "json", f"--alertmanager.url={self.url}"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True)
        return json.loads(done.stdout)


@contextmanager
def run_alertmanager(
    workdir: Path, config_text: str = ALERTMANAGER_CONFIG
) -> Iterator[Alertmanager]:
    """Alertmanager on a free 127.0.0.1 port, clustering off, stopped by PID on exit."""
    port = free_port()
    config = workdir / "alertmanager.yml"
    config.write_text(config_text)
    argv = [
        ALERTMANAGER_BINARY,
        f"--config.file={config}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]

    def ready(_: RunningProcess) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{port}/-/ready", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    with run_process("alertmanager", argv, os.environ, ready, workdir) as process:
        yield Alertmanager(process, port)


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM files, made with the openssl CLI)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([*argv, "-keyout", str(key), "-out", str(cert)], capture_output=True, check=True)
    return cert, key
