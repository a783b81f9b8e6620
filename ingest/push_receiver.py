"""The remote-write receiver: Prometheus pushes the GPU and IB series here, ingest asks it for steps.

``manage.py push_receiver`` runs one process (the samples live in its memory,
``ingest.push_store``) serving, all behind ``Authorization: Bearer INGEST_PUSH_TOKEN``:

* ``POST /api/v1/write``: Prometheus remote write 1.0 (snappy block format, protobuf
  ``WriteRequest``). 204 when taken; 400/401/411/413/415 with a JSON ``{"error": …}`` and
  nothing stored otherwise (Prometheus drops a 4xx batch and retries a 5xx one);
* ``POST /api/v1/steps``: ingest's step queries (JSON, ``STEPS_SCHEMA`` in docs/push.md);
  each answer holds the covered steps' ``data.result`` and the uncovered step runs that
  ingest reads from Prometheus instead;
* ``GET /metrics``: the receiver's counters (Prometheus text format); ``GET /healthz``.

Every ``INGEST_PUSH_SENDER_CHECK_SECONDS`` it asks the sending Prometheus
(``INGEST_PUSH_SENDER_URL``) for ``/api/v1/status/runtimeinfo``: ``startTime`` and
``lastConfigTime`` say when its remote-write queues last (re)started, the gaps
``PushStore.sender_seen`` opens. Without an answer, steps after the last one stay uncovered.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import re
import struct
import threading
import time
from collections.abc import Callable
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import cramjam
import orjson
import requests
from google.protobuf.message import DecodeError

from core.secrets import redact_url

from . import remote_write_wire
from .prometheus_io import DeadlineExceeded, TooLarge, read_body
from .push_store import PushStore, intervals
from .raw_steps import StepQuery, grid
from .remote_read import PROMPB

log = logging.getLogger(__name__)
_STALE = remote_write_wire.STALE_BYTES


class PushError(Exception):
    """A request refused: HTTP status and the message sent back."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def decode_write(
    body: bytes, max_bytes: int, cache: remote_write_wire.Cache | None = None
) -> list[tuple[tuple[tuple[str, str], ...], list]]:
    """The series of a snappy ``WriteRequest``: (labels as sent, [(ms, value or None)]).

    A staleness marker becomes None; the decompressed size is checked before decompressing.
    With ``cache`` (kept by the caller) ``remote_write_wire`` reads it,
    else (and for any body that reader cannot take) the generated protobuf classes.
    """
    try:
        size = cramjam.snappy.decompress_raw_len(body)
    except cramjam.DecompressionError:
        raise PushError(400, "body is not snappy (block format)") from None
    if size > max_bytes:
        raise PushError(413, f"body decompresses to {size} bytes, over {max_bytes}")
    try:
        data = bytes(cramjam.snappy.decompress_raw(body))
    except cramjam.DecompressionError as exc:
        raise PushError(400, f"body is not a snappy WriteRequest: {str(exc)[:200]}") from None
    if cache is not None:
        try:
            return remote_write_wire.decode(data, cache)
        except remote_write_wire.MALFORMED:
            pass  # the generated classes read it, or say what is wrong with it
    try:
        message = PROMPB["QueryResult"].FromString(data)
    except DecodeError as exc:
        raise PushError(400, f"body is not a snappy WriteRequest: {str(exc)[:200]}") from None
    series = []
    for item in message.timeseries:
        pairs = tuple([(label.name, label.value) for label in item.labels])
        samples = [
            (s.timestamp, None if s.value != s.value and _stale(s.value) else s.value)  # noqa: PLR0124
            for s in item.samples
        ]
        series.append((pairs, samples))
    return series


def _stale(value: float) -> bool:
    return struct.pack("<d", value) == _STALE


def _go_float(value: float) -> str:
    """A value as Prometheus' JSON writes it (NaN, +Inf, -Inf; else a round-tripping decimal)."""
    if math.isfinite(value):
        return repr(value)
    return "NaN" if value != value else ("+Inf" if value > 0 else "-Inf")  # noqa: PLR0124


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_steps(payload: object) -> tuple[float, int, bool, list[tuple[StepQuery, list, int]]]:
    """(step s, end s, closed, [(query, matchers per selector, start s)]) of a steps request."""
    if not isinstance(payload, dict):
        raise PushError(400, "expected a JSON object")
    step, end, closed = payload.get("step"), payload.get("end"), payload.get("closed")
    queries = payload.get("queries")
    if not _number(step) or not 0 < step <= 3600:  # type: ignore[operator]
        raise PushError(400, "step: a number of seconds in (0, 3600]")
    if not isinstance(end, int) or isinstance(end, bool):
        raise PushError(400, "end: unix seconds (integer)")
    if not isinstance(closed, bool):
        raise PushError(400, "closed: a boolean")
    if not isinstance(queries, list) or len(queries) > 1000:
        raise PushError(400, "queries: a list of at most 1000")
    parsed = [parse_query(number, query, end, float(step)) for number, query in enumerate(queries)]  # type: ignore[arg-type]
    return float(step), end, closed, parsed  # type: ignore[arg-type]


def parse_query(number: int, query: object, end: int, step: float) -> tuple[StepQuery, list, int]:
    """One query of a steps request: (query, matchers per selector, start s)."""
    if not isinstance(query, dict):
        raise PushError(400, f"queries[{number}]: expected start, by, selectors")
    try:
        start = query["start"]
        by = tuple(query["by"])
        selectors = [
            [(int(kind), str(label), str(value)) for kind, label, value in selector]
            for selector in query["selectors"]
        ]
        timestamps = query.get("timestamps", False)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise PushError(400, f"queries[{number}]: expected start, by, selectors") from None
    bad_start = not isinstance(start, int) or isinstance(start, bool) or start > end
    if bad_start or not 1 <= len(selectors) <= 2 or not isinstance(timestamps, bool):
        raise PushError(400, f"queries[{number}]: bad start, selectors or timestamps")
    if any(not isinstance(label, str) for label in by) or (end - start) / step > 11000:
        raise PushError(400, f"queries[{number}]: bad by, or over 11,000 steps")
    try:
        for kind, _label, value in (m for selector in selectors for m in selector):
            if kind not in (0, 1, 2, 3):
                raise ValueError(kind)
            if kind >= 2:
                re.compile(value)
    except (ValueError, re.error):
        raise PushError(400, f"queries[{number}]: bad matcher") from None
    names = tuple(f"s{i}" for i in range(len(selectors)))
    return StepQuery(by, names, timestamps), selectors, start


class Receiver:
    """The store, its lock and the request handling (HTTP-free, for tests and the server)."""

    def __init__(
        self,
        store: PushStore,
        token: str,
        *,
        max_bytes: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not token:
            raise ValueError(
                "INGEST_PUSH_TOKEN is empty: the receiver takes no unauthenticated writes"
            )
        self.store = store
        self.lock = threading.Lock()
        self._digest = hashlib.sha256(token.encode()).digest()
        self.max_bytes = max_bytes
        self.clock = clock
        self.refused: dict[int, int] = {}
        #: ``remote_write_wire``'s, shared by the writing threads (the GIL makes each get
        #: and set atomic; two threads may both fill one entry, with equal values).
        self.labels = remote_write_wire.Cache()

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    def authorized(self, header: str | None) -> bool:
        """Whether ``Authorization`` carries the token (compared as SHA-256 digests)."""
        if not header or not header.startswith("Bearer "):
            return False
        offered = hashlib.sha256(header[7:].strip().encode()).digest()
        return hmac.compare_digest(offered, self._digest)

    def write(self, content_type: str, encoding: str, body: bytes) -> None:
        """Take one remote-write body (raises ``PushError``)."""
        if not content_type.startswith("application/x-protobuf"):
            raise PushError(415, "Content-Type must be application/x-protobuf")
        if encoding.lower() != "snappy":
            raise PushError(415, "Content-Encoding must be snappy")
        series = decode_write(body, self.max_bytes, self.labels)
        with self.lock:
            misrouted = self.store.counters.misrouted
            self.store.add(series)
            self.store.prune(self.now_ms())
            if self.store.counters.misrouted and not misrouted:
                index, count = self.store.shard
                log.error(
                    "push: a series of another shard arrived (this receiver takes %s/%s of "
                    "hashmod(%s)): the sender's remote_write sharding does not match; every "
                    "step is read from Prometheus until this receiver restarts",
                    index, count, self.store.shard_label,
                )  # fmt: skip

    def steps(self, body: bytes) -> dict[str, Any]:
        """Answer a steps request (raises ``PushError``)."""
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise PushError(400, "body is not JSON") from None
        step, end, closed, queries = parse_steps(payload)
        step_ms = round(step * 1000)
        answers = []
        with self.lock:
            now = self.now_ms()
            for query, selectors, start in queries:
                times = grid(start, end, step)
                missing = self.store.uncovered(times, now)
                gone = set(missing)
                covered = [ts for ts in times if ts not in gone] if missing else times
                result = self.store.answer(query, selectors, covered, closed) if covered else []
                result.sort(key=lambda item: sorted(item["metric"].items()))  # as a range query
                self.store.counters.uncovered += len(missing)
                answers.append(
                    {
                        "result": [
                            {
                                "metric": item["metric"],
                                "values": [[ts, _go_float(v)] for ts, v in item["values"]],
                            }
                            for item in result
                        ],
                        "uncovered": [list(run) for run in intervals(missing, step_ms)],
                    }
                )
        return {"answers": answers, "shard": list(self.store.shard)}

    def sender_seen(self, start_ms: int) -> None:
        with self.lock:
            if self.store.sender_seen(start_ms, self.now_ms()):
                log.warning("push: the sending Prometheus restarted; gaps %s", self.store.gaps[-1])

    def metrics(self) -> str:
        """The counters in Prometheus text format."""
        with self.lock:
            counters = vars(self.store.counters).copy()
            series = sum(len(held) for held in self.store.by_name.values())
            samples = sum(len(s) for held in self.store.by_name.values() for s in held.values())
            checked = self.store.checked_ms / 1000
            newest = self.store.newest_ms / 1000
        lines = []
        for name, value in counters.items():
            metric = f"clusterwatch_push_{name}_total"
            lines += [f"# TYPE {metric} counter", f"{metric} {value}"]
        if self.refused:
            lines.append("# TYPE clusterwatch_push_refused_total counter")
        for status, count in sorted(self.refused.items()):
            lines.append(f'clusterwatch_push_refused_total{{code="{status}"}} {count}')
        lines += [
            "# TYPE clusterwatch_push_series gauge",
            f"clusterwatch_push_series {series}",
            "# TYPE clusterwatch_push_samples gauge",
            f"clusterwatch_push_samples {samples}",
            "# TYPE clusterwatch_push_sender_checked_seconds gauge",
            f"clusterwatch_push_sender_checked_seconds {checked}",
            "# TYPE clusterwatch_push_newest_sample_seconds gauge",
            f"clusterwatch_push_newest_sample_seconds {newest}",
        ]
        return "\n".join(lines) + "\n"


def runtime_start_ms(data: object) -> int | None:
    """When the sender's remote-write queues last started: max(startTime, lastConfigTime)."""
    if not isinstance(data, dict):
        return None
    found = []
    for key in ("startTime", "lastConfigTime"):
        value = data.get(key)
        if isinstance(value, str) and value and not value.startswith("0001-"):
            try:
                found.append(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
            except ValueError:
                continue
    return round(max(found) * 1000) if found else None


def check_sender(receiver: Receiver, url: str, timeout: float) -> bool:
    """Ask the sender's runtimeinfo once; True when it answered with a start time."""
    deadline = time.monotonic() + timeout
    try:
        with requests.get(
            f"{url.rstrip('/')}/api/v1/status/runtimeinfo", timeout=timeout, stream=True
        ) as response:
            response.raise_for_status()
            body = read_body(response, deadline, 1 << 20)
        start = runtime_start_ms(orjson.loads(body).get("data"))
    except (
        requests.RequestException,
        DeadlineExceeded,
        TooLarge,
        ValueError,
        AttributeError,
    ) as exc:
        log.warning("push: %s runtimeinfo: %s", redact_url(url), str(exc)[:200])
        return False
    if start is None:
        return False
    receiver.sender_seen(start)
    return True


class Handler(BaseHTTPRequestHandler):
    """The four routes of one ``Receiver`` (``_handler`` binds it); refusals are JSON errors."""

    receiver: Receiver

    def _send(self, status: int, payload: bytes = b"", kind: str = "application/json") -> None:
        self.send_response(status)
        if payload:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if payload:
            self.wfile.write(payload)

    def _refuse(self, status: int, message: str) -> None:
        refused = self.receiver.refused
        refused[status] = refused.get(status, 0) + 1
        self._send(status, orjson.dumps({"error": message}))

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise PushError(411, "Content-Length is required")
        if int(length) > self.receiver.max_bytes:
            raise PushError(413, f"body of {length} bytes, over {self.receiver.max_bytes}")
        return self.rfile.read(int(length))

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/healthz":
            self._send(200, b'{"status": "ok"}')
        elif not self.receiver.authorized(self.headers.get("Authorization")):
            self._refuse(401, "missing or wrong bearer token")
        elif self.path == "/metrics":
            self._send(200, self.receiver.metrics().encode(), "text/plain; version=0.0.4")
        else:
            self._refuse(404, "no such route")

    def do_POST(self) -> None:  # noqa: N802
        try:
            if self.path not in ("/api/v1/write", "/api/v1/steps"):
                raise PushError(404, "no such route")
            if not self.receiver.authorized(self.headers.get("Authorization")):
                raise PushError(401, "missing or wrong bearer token")
            body = self._body()
            if self.path == "/api/v1/steps":
                self._send(200, orjson.dumps(self.receiver.steps(body)))
                return
            self.receiver.write(
                self.headers.get("Content-Type", ""), self.headers.get("Content-Encoding", ""), body
            )
            self._send(204)
        except PushError as exc:
            self._refuse(exc.status, str(exc))

    def log_message(self, *args: object) -> None:  # requests are counted, not logged
        return


def _handler(receiver: Receiver, timeout: float) -> type[Handler]:
    # ``timeout`` is StreamRequestHandler's per-socket-operation limit: a stalled client is dropped
    return type("BoundHandler", (Handler,), {"receiver": receiver, "timeout": timeout})


class ReceiverServer(ThreadingHTTPServer):
    """The HTTP server of one ``Receiver``; ``daemon_threads``: requests never block exit."""

    daemon_threads = True


def serve(
    receiver: Receiver,
    host: str,
    port: int,
    *,
    sender_url: str | None,
    check_seconds: float,
    timeout: float,
) -> ReceiverServer:
    """Start serving in background threads (the server and the sender check); returns the server."""
    server = ReceiverServer((host, port), _handler(receiver, timeout))
    threading.Thread(
        target=server.serve_forever, args=(0.1,), name="push-receiver", daemon=True
    ).start()
    if sender_url:

        def poll() -> None:
            while True:
                check_sender(receiver, sender_url, timeout)
                time.sleep(check_seconds)

        threading.Thread(target=poll, name="push-sender-check", daemon=True).start()
    return server
