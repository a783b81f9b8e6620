"""A tiny Prometheus-compatible HTTP(S) server that records every request (headers, path).

Stands in for Thanos Query / Mimir / VictoriaMetrics in backend tests: answers
``/api/v1/query``, ``/api/v1/query_range`` and ``/api/v1/label/__name__/values``
under any path prefix, optionally after a delay, and counts requests in flight.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VECTOR = {
    "resultType": "vector",
    "result": [{"metric": {"Hostname": "gpu-001"}, "value": [1, "1"]}],
}
MATRIX = {
    "resultType": "matrix",
    "result": [{"metric": {"Hostname": "gpu-001"}, "values": [[1, "1"]]}],
}


@dataclass
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class FakePrometheus:
    """The running server: its URL, what it saw, the most requests it held at once."""

    url: str
    delay: float = 0.0
    requests: list[Seen] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, path: str) -> dict[str, object]:
        if path.endswith("/api/v1/query_range"):
            return {"status": "success", "data": MATRIX}
        if path.endswith("/api/v1/query"):
            return {"status": "success", "data": VECTOR}
        return {"status": "success", "data": ["DCGM_FI_DEV_GPU_UTIL"]}


def _handler(fake: FakePrometheus) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            path = urlsplit(self.path).path
            with fake.lock:
                fake.requests.append(Seen(self.command, path, dict(self.headers.items())))
                fake.in_flight += 1
                fake.most_in_flight = max(fake.most_in_flight, fake.in_flight)
            try:
                time.sleep(fake.delay)
                body = json.dumps(fake.answer(path)).encode()
            finally:
                # Out of flight before the answer is written: a client may send its next query
                # as soon as it has read this one, and that query's thread must not find this
                # one still counted (a race that made limit 3 read as 4).
                with fake.lock:
                    fake.in_flight -= 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _serve  # noqa: N815 - http.server's naming

        def log_message(self, *args: object) -> None:  # quiet
            pass

    return Handler


def self_signed(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) for 127.0.0.1, the certificate being its own CA bundle."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "ca.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@contextlib.contextmanager
def fake_prometheus(
    prefix: str = "", delay: float = 0.0, tls: tuple[Path, Path] | None = None
) -> Iterator[FakePrometheus]:
    """Serve on a free port of 127.0.0.1; the URL ends with ``prefix``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    scheme = "https" if tls else "http"
    fake = FakePrometheus(f"{scheme}://127.0.0.1:{server.server_address[1]}{prefix}", delay)
    server.RequestHandlerClass = _handler(fake)
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
