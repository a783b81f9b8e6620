"""step_reads: which backend gets remote read, batches over the size cap, the way back to query_range.

A local HTTP server plays the backend (the one seam); the values themselves are compared with a
real Prometheus in tests/conformance/test_read_paths.py and tests/ingest/test_remote_read.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler

import cramjam
import orjson
import pytest
from django.test.utils import override_settings

from ingest import flavor, step_reads
from ingest.prometheus import PrometheusClient, RemoteReadUnsupported
from ingest.remote_read import PROMPB
from ingest.step_reads import read_steps
from tests.ingest.test_remote_read import fake_backend, send

T0 = 1_767_225_600
MATRIX = orjson.dumps(
    {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"node": "a"}, "values": [[T0, "1"]]}]}}
)  # fmt: skip
BIG = "x" * 700  # one series of it fits under a 1,024-byte cap, two do not


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def samples_answer(request_body: bytes) -> bytes:
    """A SAMPLES answer: per query one series ``m{big, node="a"}`` with one sample at T0."""
    request = PROMPB["ReadRequest"].FromString(bytes(cramjam.snappy.decompress_raw(request_body)))
    response = PROMPB["ReadResponse"]()
    for _query in request.queries:
        series = response.results.add().timeseries.add()
        for name, value in (("__name__", "m"), ("big", BIG), ("node", "a")):
            series.labels.add(name=name, value=value)
        series.samples.add(timestamp=T0 * 1000, value=1.0)
    return bytes(cramjam.snappy.compress_raw(response.SerializeToString()))


def paths(received: list[tuple[str, dict[str, str], bytes]]) -> list[str]:
    return [path.split("?")[0] for path, _headers, _body in received]


def test_auto_reads_the_families_through_query_range() -> None:
    with fake_backend(lambda h, _: send(h, 200, MATRIX, "application/json")) as (url, received):
        with override_settings(PROMETHEUS_READ_PATH="auto"):
            list(read_steps(PrometheusClient(url), [("max by (node) (m)", _at(T0))], _at(T0), 30.0))
    assert step_reads.AUTO_READS_RAW is False
    assert paths(received) == ["/api/v1/query_range"]


def test_a_backend_without_remote_read_gets_query_range_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(step_reads, "AUTO_READS_RAW", True)

    def answer(handler: BaseHTTPRequestHandler, _: bytes) -> None:
        if handler.path == "/api/v1/read":
            send(handler, 404, b"not here", "text/plain")
        else:
            send(handler, 200, MATRIX, "application/json")

    queries = [("max by (node) (m)", _at(T0))]
    with fake_backend(answer) as (url, received), override_settings(PROMETHEUS_READ_PATH="auto"):
        first = list(read_steps(PrometheusClient(url), queries, _at(T0), 30.0))
        second = list(read_steps(PrometheusClient(url), queries, _at(T0), 30.0))
    flavor._NO_REMOTE_READ.discard(url)
    assert first == second == [(0, [{"metric": {"node": "a"}, "values": [[T0, "1"]]}])]
    assert paths(received) == [
        "/api/v1/status/buildinfo",
        "/api/v1/read",
        "/api/v1/query_range",
        "/api/v1/query_range",
    ]


def test_forced_remote_read_on_a_backend_without_it_fails_the_read() -> None:
    with fake_backend(lambda h, _: send(h, 404, b"no", "text/plain")) as (url, received):
        with override_settings(PROMETHEUS_READ_PATH="remote_read"):
            with pytest.raises(RemoteReadUnsupported, match="HTTP 404"):
                list(read_steps(PrometheusClient(url), [("max by (node) (m)", _at(T0))], _at(T0), 30.0))  # fmt: skip
    step_reads._CLOSED.pop(url, None)
    assert url not in flavor._NO_REMOTE_READ and "/api/v1/query_range" not in paths(received)


@pytest.mark.parametrize("path", ["query_range", "range_selector"])
def test_query_range_and_range_selector_settings_read_through_query_range(path: str) -> None:
    with fake_backend(lambda h, _: send(h, 200, MATRIX, "application/json")) as (url, received):
        with override_settings(PROMETHEUS_READ_PATH=path):
            found = list(read_steps(PrometheusClient(url), [("max by (node) (m)", _at(T0))], _at(T0), 30.0))  # fmt: skip
    assert found == [(0, [{"metric": {"node": "a"}, "values": [[T0, "1"]]}])]
    assert paths(received) == ["/api/v1/query_range"]


def test_an_answer_over_the_cap_is_asked_again_in_halves() -> None:
    def answer(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if handler.path == "/api/v1/read":
            send(handler, 200, samples_answer(body), "application/x-protobuf")
        else:
            send(handler, 200, b'{"status":"success","data":{"version":"2.42.0"}}', "application/json")  # fmt: skip

    queries = [(f"max by (node) (m{{q='{i}'}})", _at(T0)) for i in range(4)]
    expected = [(i, [{"metric": {"node": "a"}, "values": [(float(T0), 1.0)]}]) for i in range(4)]
    with fake_backend(answer) as (url, received):
        with override_settings(
            PROMETHEUS_READ_PATH="remote_read", PROMETHEUS_MAX_ANSWER_BYTES=1024
        ):
            first = list(read_steps(PrometheusClient(url), queries, _at(T0), 30.0))
            reads = paths(received).count("/api/v1/read")
            second = list(read_steps(PrometheusClient(url), queries, _at(T0), 30.0))
    learned = step_reads._BATCH.pop(url)
    step_reads._CLOSED.pop(url)
    assert first == second == expected
    assert reads == 1 + 2 + 4  # all four, two halves, four quarters
    assert paths(received).count("/api/v1/read") - reads == 4 and learned == 1
