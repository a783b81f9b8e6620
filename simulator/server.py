"""Live mode: a threaded HTTP server that answers every simulated target at its own path."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from simulator.model import Cluster
from simulator.render import render_target, renderer_for
from simulator.targets import file_sd

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class SimulatorServer(ThreadingHTTPServer):
    """Serves /metrics/<dialect>[/<node>] for one cluster; `clock` gives the sample time."""

    daemon_threads = True

    def __init__(
        self,
        cluster: Cluster,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        super().__init__((host, port), _Handler)

    @property
    def address(self) -> str:
        """host:port the server listens on."""
        host, port = self.server_address[:2]
        return f"{host}:{port}"


class _Handler(BaseHTTPRequestHandler):
    server: SimulatorServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = unquote(self.path.split("?", 1)[0])
        cluster = self.server.cluster
        if path in ("/", "/targets"):
            return self._send(
                200,
                json.dumps(file_sd(renderer_for(cluster).targets, self.server.address), indent=1),
                "application/json",
            )
        if path == "/-/healthy":
            return self._send(200, "ok\n", CONTENT_TYPE)
        targets = {unquote(t.path): t for t in renderer_for(cluster).targets}
        target = targets.get(path)
        if target is None:
            return self._send(404, "no such target\n", CONTENT_TYPE)
        body = render_target(cluster, target, self.server.clock())
        if body is None:  # node_down: the exporter does not answer
            return self._send(503, "node down\n", CONTENT_TYPE)
        self._send(200, body, CONTENT_TYPE)

    def _send(self, status: int, body: str, content_type: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet: Prometheus scrapes every few seconds."""


@contextlib.contextmanager
def serving(
    cluster: Cluster, host: str = "127.0.0.1", port: int = 0, clock: Callable[[], float] = time.time
) -> Iterator[SimulatorServer]:
    """Run a SimulatorServer in a background thread for the duration of the block."""
    server = SimulatorServer(cluster, host, port, clock)
    thread = threading.Thread(target=server.serve_forever, name="simulator-http", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
