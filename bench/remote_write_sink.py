"""A remote-write receiver for bench_remote_write: answers 204, decodes, counts.

    python bench/remote_write_sink.py PORT

``POST /api/v1/write``: the snappy body is decompressed and parsed as a ``WriteRequest``
(``timeseries`` = 1, the shape of ``QueryResult``), and each series' label dict and samples
are built, the least a receiver that stores them must do. ``GET /stats``: JSON {requests,
series, samples, bytes}.
Its own process, so its CPU is read from /proc apart from the bench's and Prometheus'.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cramjam  # noqa: E402

from ingest.remote_read import PROMPB  # noqa: E402

STATS = {"requests": 0, "series": 0, "samples": 0, "bytes": 0}
LOCK = threading.Lock()


def decoded(body: bytes) -> tuple[int, int]:
    """(series, samples) of one snappy ``WriteRequest`` body."""
    message = PROMPB["QueryResult"].FromString(bytes(cramjam.snappy.decompress_raw(body)))
    series = samples = 0
    for item in message.timeseries:
        labels = {label.name: label.value for label in item.labels}
        points = [(s.timestamp, s.value) for s in item.samples]
        series += bool(labels)
        samples += len(points)
    return series, samples


class Handler(BaseHTTPRequestHandler):
    """The receiver's two routes."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        series, samples = decoded(body)
        with LOCK:
            STATS["requests"] += 1
            STATS["series"] += series
            STATS["samples"] += samples
            STATS["bytes"] += len(body)
        self.send_response(204)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        with LOCK:
            payload = json.dumps(STATS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:  # quiet
        return


def main() -> None:
    """Serve until killed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    args = parser.parse_args()
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
