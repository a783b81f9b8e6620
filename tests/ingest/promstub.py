"""A recorded-answer Prometheus: serves canned JSON bodies over real HTTP on 127.0.0.1.

Only for parser edge cases (NaN, Inf, missing labels, non-JSON bodies): each
route answers the body registered for the first metric name found in the
query (a ``timestamp(...)`` query: the body under "timestamp", so by default none
and ingest computes over the step); anything else gets an empty matrix. Everything else is tested against a
real Prometheus.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DATA = Path(__file__).parent / "data"
EMPTY = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}})


class StubPrometheus:
    """Canned bodies by metric name; ``requests`` records every query received (path, method,
    Accept-Encoding and the query's parameters, from the URL or a form body)."""

    def __init__(self, bodies: dict[str, str], names: list[str] | None = None) -> None:
        self.bodies = bodies
        self.names = names if names is not None else sorted(bodies)
        self.requests: list[dict[str, str]] = []
        self.url = ""

    def answer(
        self, path: str, params: dict[str, str], method: str = "GET", encoding: str = ""
    ) -> tuple[int, str]:
        self.requests.append(
            {"path": path, "method": method, "accept_encoding": encoding, **params}
        )
        if path.endswith("/label/__name__/values"):
            return 200, json.dumps({"status": "success", "data": self.names})
        query = params.get("query", "")
        if "timestamp(" in query:  # sample times (ingest.sampling): only when registered
            return 200, self.bodies.get("timestamp", EMPTY)
        metrics = re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", query)
        for metric in metrics:
            if metric in self.bodies:
                return 200, self.bodies[metric]
        return 200, EMPTY


def recorded(name: str) -> str:
    """The text of tests/ingest/data/NAME."""
    return (DATA / name).read_text()


@contextmanager
def serving(stub: StubPrometheus) -> Iterator[StubPrometheus]:
    """Serve ``stub`` on a free port for the duration of the block."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, params: dict[str, str]) -> None:
            encoding = self.headers.get("Accept-Encoding", "")
            status, body = stub.answer(urlsplit(self.path).path, params, self.command, encoding)
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's API
            self._reply({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            self._reply({k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()})

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
