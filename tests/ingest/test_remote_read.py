"""``PrometheusClient.read_raw``: remote read (XOR chunks, SAMPLES) and range selectors.

Against a real Prometheus: a backfilled history at a pinned epoch whose samples the test
knows exactly (a counter reset, a gap, irregular intervals, NaN and ±Inf, > 120 samples
so several chunks per series, a series with 26 labels), and a live-scraped target one of
whose series vanishes (Prometheus writes a staleness marker). Both read paths must give
exactly the samples written. Hostile answers come from a fake server on 127.0.0.1.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import cramjam
import google_crc32c
import orjson
import pytest
import requests
from django.test.utils import override_settings

from ingest import flavor
from ingest.prometheus import (
    CHUNKS_FROM_MS,
    AnswerTooLarge,
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    RemoteReadUnsupported,
    Series,
    remote_read_types_for,
)
from ingest.remote_read import PROMPB, SAMPLES, STREAMED_XOR_CHUNKS, frames, matchers
from ingest.shards import ScopedClient
from ingest.step_reads import read_steps
from ingest.xor_chunks import ChunkError, decode_xor
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z: the history's first sample
STEP = 15.0
SAMPLES_PER_SERIES = 300  # > 120: Prometheus cuts a chunk every 120 samples
MANY_LABELS = {f"l{i:02d}": f"value-{i:02d}" for i in range(25)}
Point = tuple[float, float]


def history() -> dict[tuple[str, tuple[tuple[str, str], ...]], list[Point]]:
    """(metric, labels) → the samples written, exactly (timestamps in ms precision)."""
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[Point]] = {}
    total, counter = 0.0, []
    for i in range(SAMPLES_PER_SERIES):  # jitter of a few ms: 14-bit delta-of-deltas
        total = 3.25 if i == 200 else total + 1000.5 + (i % 7) * 12345.678  # reset at 200
        counter.append((T0 + STEP * i + (i * 7 % 13) / 1000, total))
    series[("cw_rr_bytes_total", (("node", "a"), ("port", "1")))] = counter
    gap = [(T0 + STEP * i, i * 1e9 + 0.5) for i in range(SAMPLES_PER_SERIES) if not 100 <= i < 150]
    series[("cw_rr_bytes_total", (("node", "b"), ("port", "1")))] = gap
    gauge, t = [], float(T0)
    for i in range(SAMPLES_PER_SERIES):
        t += 61 if i % 40 == 39 else 400 if i == 222 else STEP  # 17- and 20-bit delta-of-deltas
        special = {50: math.nan, 51: math.inf, 52: -math.inf}
        gauge.append((t, special.get(i, round(40 + 10 * math.sin(i / 10), 6))))
    labels = tuple(sorted({**MANY_LABELS, "node": "c"}.items()))
    series[("cw_rr_temp", labels)] = gauge
    return series


def openmetrics(written: dict[tuple[str, tuple[tuple[str, str], ...]], list[Point]]) -> str:
    """The history as an OpenMetrics file for promtool."""
    lines = ["# TYPE cw_rr_bytes counter"]
    families = {"cw_rr_bytes_total": None, "cw_rr_temp": "# TYPE cw_rr_temp gauge"}
    for family, type_line in families.items():
        if type_line:
            lines.append(type_line)
        for (metric, labels), points in written.items():
            if metric != family:
                continue
            text = ",".join(f'{k}="{v}"' for k, v in labels)
            for ts, value in points:
                lines.append(f"{metric}{{{text}}} {_number(value)} {ts:.3f}")
    return "\n".join([*lines, "# EOF", ""])


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value == math.inf else "-Inf" if value == -math.inf else repr(value)


def expected(metric: str, start: float, end: float) -> tuple[list[Series], int]:
    """(series with their finite samples start < ts <= end, non-finite count) of ``metric``."""
    found, skipped = [], 0
    for (name, labels), written in history().items():
        if name != metric:
            continue
        inside = [(ts, v) for ts, v in written if start < ts <= end]
        finite = [(ts, v) for ts, v in inside if math.isfinite(v)]
        skipped += len(inside) - len(finite)
        if finite:
            found.append(Series({"__name__": name, **dict(labels)}, finite))
    return found, skipped


class LiveTarget:
    """A scrape target whose exposition the test changes (a vanished series → stale marker)."""

    def __init__(self) -> None:
        self.body = b"cw_live_gauge 1.5\ncw_live_vanishing 7\ncw_live_nan NaN\n"
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        target = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(target.body)

            def log_message(self, *args: object) -> None:
                return

        return Handler

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    """A real Prometheus: the pinned history, plus a live target scraped every second."""
    require_prometheus()
    workdir = Path(tmp_path_factory.mktemp("remote_read"))
    (workdir / "history.om").write_text(openmetrics(history()))
    create_blocks(workdir / "history.om", workdir / "tsdb")
    target = LiveTarget()
    config = workdir / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: live\n"
        f"    static_configs:\n      - targets: ['{target.address}']\n"
    )
    process = PrometheusProcess(config, workdir / "tsdb", retention="3650d").start()
    try:
        _wait(lambda: len(_first(process.query("cw_live_vanishing[1m]")).get("values", [])) >= 3)
        target.body = b"cw_live_gauge 1.5\ncw_live_nan NaN\n"  # the next scrape marks it stale
        _wait(lambda: not process.query("cw_live_vanishing"))
        yield process
    finally:
        process.stop()
        target.server.shutdown()
        target.server.server_close()


def _first(result: list[dict]) -> dict:
    return result[0] if result else {}


def _wait(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("Prometheus did not get there in time")
        time.sleep(0.2)


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def read(url: str, path: str, selector: str, start: float, end: float) -> tuple[list[Series], int]:
    """read_raw through ``path``, its series sorted by labels."""
    with override_settings(PROMETHEUS_READ_PATH=path):
        answer = PrometheusClient(url).read_raw(selector, _at(start), _at(end))
    return sorted(answer.series, key=lambda s: sorted(s.labels.items())), answer.skipped


WINDOWS = [
    pytest.param(T0 - 60, T0 + 7200, id="the whole history"),
    # starts and ends exactly on samples of the gap series: the start is out, the end in
    pytest.param(T0 + STEP * 90, T0 + STEP * 210, id="across chunks, the reset and the gap"),
    pytest.param(T0 + STEP * 49, T0 + STEP * 53, id="the non-finite values"),
    pytest.param(T0 + STEP * 120.5, T0 + STEP * 121.5, id="one sample mid-chunk"),
]


@pytest.mark.parametrize(("start", "end"), WINDOWS)
@pytest.mark.parametrize("path", ["remote_read", "range_selector"])
def test_it_reads_exactly_the_samples_written(
    prometheus: PrometheusProcess, path: str, start: float, end: float
) -> None:
    for metric in ("cw_rr_bytes_total", "cw_rr_temp"):
        assert read(prometheus.url, path, metric, start, end) == expected(metric, start, end)


def test_the_history_spans_several_chunks_per_series(prometheus: PrometheusProcess) -> None:
    chunks = {}
    for frame in frames(_raw_remote_read(prometheus.url, "cw_rr_bytes_total", T0 - 60, T0 + 7200)):
        for series in frame.chunked_series:  # type: ignore[attr-defined]
            chunks[dict((x.name, x.value) for x in series.labels)["node"]] = len(series.chunks)
    assert chunks == {"a": 3, "b": 3}


def test_both_paths_agree_on_selectors_with_matchers(prometheus: PrometheusProcess) -> None:
    selector = 'cw_rr_bytes_total{node=~"a|b", port!="2", node!~"c"}'
    both = [
        read(prometheus.url, p, selector, T0, T0 + 1500) for p in ("remote_read", "range_selector")
    ]
    assert both[0] == both[1] == expected("cw_rr_bytes_total", T0, T0 + 1500)
    only_a = read(prometheus.url, "remote_read", 'cw_rr_bytes_total{node="a"}', T0, T0 + 1500)
    assert [s.labels["node"] for s in only_a[0]] == ["a"]


def test_a_staleness_marker_is_dropped_and_not_counted(prometheus: PrometheusProcess) -> None:
    now = time.time()
    results = {
        p: read(prometheus.url, p, "cw_live_vanishing", now - 300, now)
        for p in ("remote_read", "range_selector")
    }
    assert results["remote_read"] == results["range_selector"]
    (series,), skipped = results["remote_read"]
    assert skipped == 0 and len(series.points) >= 3 and {v for _, v in series.points} == {7.0}
    # The head chunk holds one sample more than was returned: the marker.
    body = _raw_remote_read(prometheus.url, "cw_live_vanishing", now - 300, now)
    (chunk,) = [c for f in frames(body) for s in f.chunked_series for c in s.chunks]  # type: ignore[attr-defined]
    assert int.from_bytes(chunk.data[:2], "big") == len(series.points) + 1


LIVE_STEP_QUERIES = [
    "max by (job) (cw_live_vanishing)",
    "max by (job) ((cw_live_vanishing or cw_live_gauge))",
    "max by (instance) (timestamp(cw_live_gauge))",
    "max by (job) (cw_live_nan)",
]


def _answers(url: str, path: str, start: float, end: float) -> list[tuple[int, object]]:
    """Each live query's answer through ``step_reads.read_steps`` under ``path``, comparable."""
    with override_settings(PROMETHEUS_READ_PATH=path):
        found = read_steps(
            PrometheusClient(url), [(q, _at(start)) for q in LIVE_STEP_QUERIES], _at(end), 1.0
        )
        return [
            (index, sorted(
                (sorted(item["metric"].items()), [(float(t), repr(float(v))) for t, v in item["values"]])
                for item in result
            ))
            for index, result in found
        ]  # fmt: skip


def test_step_reads_of_a_live_scrape_equal_query_ranges(prometheus: PrometheusProcess) -> None:
    def settled() -> float:  # every scrape up to it written, the marker before it
        end = float(int(time.time()) - 2)
        return 0.0 if prometheus.query("cw_live_vanishing", at=end) else end

    _wait(lambda: settled() > 0)
    end = settled() or float(int(time.time()) - 2)
    raw = _answers(prometheus.url, "remote_read", end - 60, end)
    assert raw == _answers(prometheus.url, "query_range", end - 60, end)
    vanishing, either, stamps, nan = (answer for _index, answer in raw)
    # It ends at its staleness marker, not carried through the 5-minute lookback.
    gone = vanishing[0][1][-1][0] if vanishing else end - 61
    assert gone < end and {v for _labels, points in vanishing for _t, v in points} <= {"7.0"}
    assert [labels for labels, _ in either] == [[("job", "live")]]
    assert [v for t, v in either[0][1]] == ["7.0" if t <= gone else "1.5" for t, _v in either[0][1]]
    assert either[0][1][-1] == (end, "1.5")  # the gauge goes on
    assert all(t - 1.0 < float(v) <= t for t, v in stamps[0][1])
    assert {v for _t, v in nan[0][1]} == {"nan"}


def test_live_nan_values_are_counted_alike_on_both_paths(prometheus: PrometheusProcess) -> None:
    # A window that ended 5 s ago (1 s scrapes): a scrape landing between the two reads
    # cannot make them differ (it did, once, with the window ending at the first read).
    def ended() -> float:
        return float(int(time.time()) - 5)

    _wait(
        lambda: (
            read(prometheus.url, "range_selector", "cw_live_nan", ended() - 300, ended())[1] >= 3
        )
    )
    end = ended()
    results = {
        p: read(prometheus.url, p, "cw_live_nan", end - 300, end)
        for p in ("remote_read", "range_selector")
    }
    assert results["remote_read"] == results["range_selector"]
    assert results["remote_read"][0] == [] and results["remote_read"][1] >= 3


@pytest.mark.parametrize("types", [(SAMPLES,), (STREAMED_XOR_CHUNKS,)], ids=["samples", "chunks"])
@pytest.mark.parametrize(("start", "end"), WINDOWS[:3])
def test_either_answer_decodes_to_the_same(
    prometheus: PrometheusProcess, types: tuple[int, ...], start: float, end: float
) -> None:
    with override_settings(PROMETHEUS_READ_PATH="remote_read"):
        client = PrometheusClient(prometheus.url)
        client.remote_read_types = types
        for metric in ("cw_rr_bytes_total", "cw_rr_temp"):
            answer = client.read_raw(metric, _at(start), _at(end))
            assert (answer.series, answer.skipped) == expected(metric, start, end)


def test_short_windows_ask_for_samples_and_long_ones_for_chunks() -> None:
    assert remote_read_types_for(60_000) == (SAMPLES, STREAMED_XOR_CHUNKS)
    assert remote_read_types_for(CHUNKS_FROM_MS) == (STREAMED_XOR_CHUNKS, SAMPLES)


def test_a_shard_reads_only_its_nodes(prometheus: PrometheusProcess) -> None:
    with override_settings(PROMETHEUS_READ_PATH="remote_read"):
        base = PrometheusClient(prometheus.url)
        base._known_metrics = {"cw_rr_bytes_total"}
        answer = ScopedClient(base, 'node=~"b"').read_raw(
            "cw_rr_bytes_total", _at(T0), _at(T0 + 300)
        )
    assert [s.labels["node"] for s in answer.series] == ["b"]


def _raw_remote_read(url: str, selector: str, start: float, end: float) -> bytes:
    request = PROMPB["ReadRequest"](accepted_response_types=[1])
    query = request.queries.add(
        start_timestamp_ms=int(start * 1000), end_timestamp_ms=int(end * 1000)
    )
    for kind, name, value in matchers(selector):
        query.matchers.add(type=kind, name=name, value=value)
    response = requests.post(
        f"{url}/api/v1/read",
        data=bytes(cramjam.snappy.compress_raw(request.SerializeToString())),
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"},
        timeout=30,
    )
    response.raise_for_status()
    return response.content


# --- selectors and the decoder --------------------------------------------------


def test_selectors_become_matchers() -> None:
    assert matchers('m{a="x", b!="y",c=~"g\\\\.1|g2", d!~\'z\',}') == [
        (0, "__name__", "m"),
        (0, "a", "x"),
        (1, "b", "y"),
        (2, "c", "g\\.1|g2"),
        (3, "d", "z"),
    ]
    assert matchers('{__name__="up", job="a\\"b"}') == [(0, "__name__", "up"), (0, "job", 'a"b')]
    for bad in ("rate(m[5m])", "m[5m]", 'm{a="x" b="y"}', "", "m{a=x}"):
        with pytest.raises(ValueError, match="not a plain vector selector"):
            matchers(bad)


@pytest.mark.parametrize(
    "chunk",
    [
        b"",
        b"\x00",
        b"\x00\x05",
        b"\x00\x02\x80",
        b"\x00\x03\x02" + b"\x00" * 8,
        b"\xff\xff\x02" + b"\x01" * 12,
    ],
)
def test_a_truncated_chunk_raises(chunk: bytes) -> None:
    with pytest.raises(ChunkError):
        decode_xor(chunk, 0, 10**15)


# --- hostile answers ---------------------------------------------------------------


@contextmanager
def fake_backend(
    answer: Callable[[BaseHTTPRequestHandler, bytes], None],
) -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    """A server on 127.0.0.1 answering each request with ``answer(handler, body)``."""
    received: list[tuple[str, dict[str, str], bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append((self.path, dict(self.headers), body))
            try:
                answer(self, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up

        do_GET = do_POST = _handle  # noqa: N815 - http.server's API

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


STREAMED = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"


def frame(payload: bytes, checksum: int | None = None) -> bytes:
    size, prefix = len(payload), b""
    while size >= 0x80:
        prefix, size = prefix + bytes([size & 0x7F | 0x80]), size >> 7
    crc = google_crc32c.value(payload) if checksum is None else checksum
    return prefix + bytes([size]) + crc.to_bytes(4, "big") + payload


def chunked(data: bytes, kind: int = 1) -> bytes:
    response = PROMPB["ChunkedReadResponse"]()
    series = response.chunked_series.add()
    series.labels.add(name="__name__", value="m")
    series.chunks.add(min_time_ms=0, max_time_ms=10**13, type=kind, data=data)
    return response.SerializeToString()


HOSTILE = {
    "not protobuf": frame(b"\xff\xff\xff\xff\xff"),
    "bad checksum": frame(chunked(b"\x00\x00"), checksum=1),
    "truncated frame": frame(chunked(b"\x00\x00"))[:-3],
    "huge frame length": b"\xff\xff\xff\xff\xff\xff\xff\xff\x7f" + b"\x00" * 20,
    "overlong varint": b"\xff" * 12,
    "truncated chunk": frame(chunked(b"\x00\x78\x02" + b"\x40" * 9)),
    "sample count past the data": frame(chunked(b"\xff\xff" + b"\x02" + b"\x00" * 30)),
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_streamed_answer_raises_a_prometheus_error(body: bytes) -> None:
    with fake_backend(lambda h, _: send(h, 200, body, STREAMED)) as (url, _):
        with override_settings(PROMETHEUS_READ_PATH="remote_read"):
            with pytest.raises(PrometheusError, match="malformed remote-read answer"):
                PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))


@pytest.mark.parametrize(
    "body",
    [
        b"\x05garbage",
        b"\xff\xff\xff\xff\x0f" + b"\x00" * 10,
        cramjam.snappy.compress_raw(b"\xff\x01"),
    ],
    ids=["bad snappy", "snappy length over the cap", "bad protobuf"],
)
def test_a_hostile_samples_answer_raises_a_prometheus_error(body: bytes) -> None:
    with fake_backend(lambda h, _: send(h, 200, bytes(body), "application/x-protobuf")) as (url, _):
        with override_settings(PROMETHEUS_READ_PATH="remote_read"):
            with pytest.raises(PrometheusError, match="malformed remote-read answer"):
                PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))


MATRIX = orjson.dumps(
    {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "m"}, "values": [[T0 + 30, "1"], [T0 + 60, "2"]]}]}}
)  # fmt: skip


@pytest.mark.parametrize("status", [404, 405, 501])
def test_auto_falls_back_to_range_selectors_for_good(status: int) -> None:
    def answer(handler: BaseHTTPRequestHandler, _: bytes) -> None:
        if handler.path == "/api/v1/read":
            send(handler, status, b"not here", "text/plain")
        else:
            send(handler, 200, MATRIX, "application/json")

    with fake_backend(answer) as (url, received), override_settings(PROMETHEUS_READ_PATH="auto"):
        client = PrometheusClient(url)
        first = client.read_raw("m", _at(T0), _at(T0 + 60))
        second = PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))
    flavor._NO_REMOTE_READ.discard(url)
    assert (
        first.series
        == second.series
        == [Series({"__name__": "m"}, [(T0 + 30, 1.0), (T0 + 60, 2.0)])]
    )
    assert [path.split("?")[0] for path, _, _ in received] == [
        "/api/v1/read",
        "/api/v1/query",
        "/api/v1/query",
    ]


def test_forced_remote_read_does_not_fall_back() -> None:
    with fake_backend(lambda h, _: send(h, 404, b"no", "text/plain")) as (url, received):
        with override_settings(PROMETHEUS_READ_PATH="remote_read"):
            with pytest.raises(RemoteReadUnsupported, match="HTTP 404"):
                PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))
    assert url not in flavor._NO_REMOTE_READ and len(received) == 1


def test_a_histogram_chunk_under_auto_falls_back() -> None:
    def answer(handler: BaseHTTPRequestHandler, _: bytes) -> None:
        if handler.path == "/api/v1/read":
            send(handler, 200, frame(chunked(b"\x00\x00", kind=2)), STREAMED)
        else:
            send(handler, 200, MATRIX, "application/json")

    with fake_backend(answer) as (url, _), override_settings(PROMETHEUS_READ_PATH="auto"):
        answer_ = PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))
    flavor._NO_REMOTE_READ.discard(url)
    assert len(answer_.series) == 1


def test_victoriametrics_gets_range_selectors_and_prometheus_remote_read() -> None:
    assert flavor.read_path_for(flavor.VICTORIAMETRICS, "http://vm") == "range_selector"
    assert flavor.read_path_for(flavor.PROMETHEUS, "http://prom") == "remote_read"


def test_errors_deadline_size_cap_and_headers_are_those_of_every_query() -> None:
    with fake_backend(lambda h, _: send(h, 503, b"overloaded", "text/plain")) as (url, _):
        with override_settings(PROMETHEUS_READ_PATH="remote_read"):
            with pytest.raises(PrometheusUnavailable, match="503"):
                PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 60))

    def drip(handler: BaseHTTPRequestHandler, _: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", STREAMED)
        handler.end_headers()
        for _ in range(100):
            handler.wfile.write(b"\x00")
            handler.wfile.flush()
            time.sleep(0.1)

    with fake_backend(drip) as (url, _), override_settings(PROMETHEUS_READ_PATH="remote_read"):
        began = time.monotonic()
        with pytest.raises(PrometheusUnavailable, match="deadline"):
            PrometheusClient(url, timeout=5, deadline=0.5).read_raw("m", _at(T0), _at(T0 + 1))
        assert time.monotonic() - began < 3

    big = frame(chunked(b"\x00\x00")) * 5000
    with fake_backend(lambda h, _: send(h, 200, big, STREAMED)) as (url, received):
        with override_settings(
            PROMETHEUS_READ_PATH="remote_read",
            PROMETHEUS_MAX_ANSWER_BYTES=2048,
            PROMETHEUS_BEARER_TOKEN="s3cret",
            PROMETHEUS_HEADERS={"X-Scope-OrgID": "team-a"},
        ):
            with pytest.raises(AnswerTooLarge):
                PrometheusClient(url).read_raw("m", _at(T0), _at(T0 + 4))
    # too large: read again as halves, 4 s → 2 s → 1 s, where it gives up
    assert len(received) == 3
    path, headers, body = received[0]
    request = PROMPB["ReadRequest"].FromString(bytes(cramjam.snappy.decompress_raw(body)))
    assert (path, headers["Authorization"], headers["X-Scope-OrgID"]) == (
        "/api/v1/read",
        "Bearer s3cret",
        "team-a",
    )
    assert list(request.accepted_response_types) == [0, 1]  # a short window: SAMPLES first
    assert [(q.start_timestamp_ms, q.end_timestamp_ms) for q in request.queries] == [
        ((T0) * 1000, (T0 + 4) * 1000)
    ]
