"""push_receiver over HTTP: remote write in, step answers out, every bad request a JSON 4xx."""

from __future__ import annotations

import http.client
import json
import re
import socket
import time
from collections.abc import Iterator

import cramjam
import pytest
import requests

from ingest.push_receiver import Receiver, ReceiverServer, runtime_start_ms, serve
from ingest.push_store import PushStore
from tests.support.remote_write import STALE_NAN, WRITE_HEADERS, write_requests

T = 1_772_452_800_000
TOKEN = "s3cret-push-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
UTIL = (("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("Hostname", "gpu-001"), ("gpu", "0"))


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, str]]:
    store = PushStore(300_000, 900_000, 15_000, T, re.compile(r"DCGM_FI_.*"))
    made = Receiver(store, TOKEN, max_bytes=1 << 20, clock=lambda: (T + 1_000_000) / 1000)
    made.sender_seen(T - 60_000)
    server: ReceiverServer = serve(
        made, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=5
    )
    try:
        yield made, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def post(url: str, body: bytes, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(
        url, data=body, headers={**WRITE_HEADERS, **AUTH, **(headers or {})}, timeout=10
    )


def test_a_write_then_steps_round_trip(receiver: tuple[Receiver, str]) -> None:
    made, url = receiver
    samples = [(T + 600_000, 50.0), (T + 630_000, STALE_NAN), (T + 660_000, float("nan"))]
    (body,) = write_requests({UTIL: samples})
    assert post(f"{url}/api/v1/write", body).status_code == 204
    query = {
        "start": (T + 570_000) // 1000,
        "by": ["Hostname", "gpu"],
        "selectors": [[[0, "__name__", "DCGM_FI_DEV_GPU_UTIL"]]],
        "timestamps": False,
    }
    payload = {"step": 30, "end": (T + 990_000) // 1000, "closed": True, "queries": [query]}
    answer = requests.post(f"{url}/api/v1/steps", json=payload, headers=AUTH, timeout=10)
    assert answer.status_code == 200
    assert answer.json()["shard"] == [0, 1]
    (only,) = answer.json()["answers"]
    # 600: 50; 630: stale; 660 on: NaN (a sample, not a marker) until the delay's edge (985 s).
    values = [[(T + ms) / 1000, "50.0"] for ms in (600_000,)] + [
        [(T + ms) / 1000, "NaN"] for ms in range(660_000, 960_001, 30_000)
    ]
    assert only == {
        "result": [{"metric": {"Hostname": "gpu-001", "gpu": "0"}, "values": values}],
        "uncovered": [[T + 990_000, T + 990_000]],
    }
    metrics = requests.get(f"{url}/metrics", headers=AUTH, timeout=10).text
    assert "clusterwatch_push_samples_received_total 3\n" in metrics
    assert "clusterwatch_push_series 1\n" in metrics
    assert "clusterwatch_push_misrouted_total 0\n" in metrics
    assert f"clusterwatch_push_newest_sample_seconds {(T + 660_000) / 1000}\n" in metrics


@pytest.mark.parametrize(
    ("body", "headers", "status", "error"),
    [
        (b"not snappy at all", {}, 400, "body is not a snappy WriteRequest: snappy: corrupt input"),
        (
            bytes(cramjam.snappy.compress_raw(b"\xff\xff\xff")),
            {},
            400,
            "body is not a snappy WriteRequest",
        ),
        (
            b"",
            {"Content-Type": "application/json"},
            415,
            "Content-Type must be application/x-protobuf",
        ),
        (b"", {"Content-Encoding": "gzip"}, 415, "Content-Encoding must be snappy"),
        (b"", {"Authorization": "Bearer wrong"}, 401, "missing or wrong bearer token"),
        (b"", {"Authorization": ""}, 401, "missing or wrong bearer token"),
        (
            bytes(cramjam.snappy.compress_raw(b"\0" * (2 << 20))),
            {},
            413,
            "body decompresses to 2097152 bytes",
        ),
    ],
)
def test_bad_writes_are_refused_with_json_and_change_nothing(
    receiver: tuple[Receiver, str], body: bytes, headers: dict[str, str], status: int, error: str
) -> None:
    made, url = receiver
    response = post(f"{url}/api/v1/write", body, headers)
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"].startswith(error)
    assert made.store.by_name == {}
    assert made.store.counters.requests == 0


def test_a_body_over_the_cap_is_refused_before_it_is_read(receiver: tuple[Receiver, str]) -> None:
    made, url = receiver
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    connection.putrequest("POST", "/api/v1/write")
    for name, value in {**WRITE_HEADERS, **AUTH, "Content-Length": str((1 << 20) + 1)}.items():
        connection.putheader(name, value)
    connection.endheaders()  # and no body: the answer comes without it
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())) == (
        413,
        {"error": "body of 1048577 bytes, over 1048576"},
    )
    connection.close()
    assert made.refused == {413: 1}


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ([], "expected a JSON object"),
        (
            {"step": 0, "end": 1, "closed": True, "queries": []},
            "step: a number of seconds in (0, 3600]",
        ),
        ({"step": 30, "end": "1", "closed": True, "queries": []}, "end: unix seconds (integer)"),
        ({"step": 30, "end": 1, "closed": 1, "queries": []}, "closed: a boolean"),
        (
            {"step": 30, "end": 100, "closed": True, "queries": [{"start": 1}]},
            "queries[0]: expected start, by, selectors",
        ),
        (
            {
                "step": 30,
                "end": 100,
                "closed": True,
                "queries": [{"start": 200, "by": [], "selectors": [[]]}],
            },
            "queries[0]: bad start, selectors or timestamps",
        ),
        (
            {
                "step": 30,
                "end": 100,
                "closed": True,
                "queries": [{"start": 1, "by": [], "selectors": [[[2, "a", "("]]]}],
            },
            "queries[0]: bad matcher",
        ),
        (
            {
                "step": 1,
                "end": 100000,
                "closed": True,
                "queries": [{"start": 1, "by": [], "selectors": [[]]}],
            },
            "queries[0]: bad by, or over 11,000 steps",
        ),
    ],
)
def test_bad_step_requests_are_refused(
    receiver: tuple[Receiver, str], payload: object, error: str
) -> None:
    _made, url = receiver
    response = requests.post(f"{url}/api/v1/steps", json=payload, headers=AUTH, timeout=10)
    assert (response.status_code, response.json()) == (400, {"error": error})


def test_routes_need_the_token_but_healthz(receiver: tuple[Receiver, str]) -> None:
    _made, url = receiver
    assert requests.get(f"{url}/metrics", timeout=10).status_code == 401
    assert requests.post(f"{url}/api/v1/steps", json={}, timeout=10).status_code == 401
    assert requests.get(f"{url}/healthz", timeout=10).json() == {"status": "ok"}
    assert requests.get(f"{url}/nothing", headers=AUTH, timeout=10).status_code == 404


def test_no_token_no_receiver() -> None:
    store = PushStore(300_000, 900_000, 15_000, T, re.compile(".*"))
    with pytest.raises(ValueError, match="INGEST_PUSH_TOKEN is empty"):
        Receiver(store, "", max_bytes=1024)


def test_runtimeinfo_start_is_the_later_of_start_and_reload() -> None:
    data = {"startTime": "2026-03-02T12:00:00.5Z", "lastConfigTime": "2026-03-02T12:10:00Z"}
    assert runtime_start_ms(data) == T + 600_000
    assert (
        runtime_start_ms(
            {"startTime": "2026-03-02T12:00:00Z", "lastConfigTime": "0001-01-01T00:00:00Z"}
        )
        == T
    )
    assert runtime_start_ms({"startTime": "yesterday"}) is None
    assert runtime_start_ms([]) is None


def test_a_stalled_client_is_dropped_and_others_are_served() -> None:
    store = PushStore(300_000, 900_000, 15_000, T, re.compile(r"DCGM_FI_.*"))
    made = Receiver(store, TOKEN, max_bytes=1 << 20)
    server = serve(made, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=0.5)
    try:
        stalled = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
        stalled.sendall(b"POST /api/v1/write HTTP/1.1\r\nContent-Length: 100\r\n")  # and no more
        healthz = requests.get(f"http://127.0.0.1:{server.server_port}/healthz", timeout=10)
        assert healthz.json() == {"status": "ok"}
        began = time.monotonic()
        assert stalled.recv(1024) == b""  # closed by the receiver, not by this 10 s timeout
        assert time.monotonic() - began < 5
        stalled.close()
    finally:
        server.shutdown()
        server.server_close()
    assert store.counters.requests == 0


def test_the_command_takes_a_shard_and_refuses_a_bad_one(settings) -> None:  # noqa: ANN001
    from django.core.management.base import CommandError

    from ingest.management.commands.push_receiver import build_receiver

    settings.INGEST_PUSH_TOKEN = TOKEN
    settings.INGEST_PUSH_SHARD = "1/3"
    assert build_receiver().store.shard == (1, 3)
    assert build_receiver(shard="0/2").store.shard == (0, 2)
    assert build_receiver(shard="").store.shard == (0, 1)
    with pytest.raises(CommandError, match="shard '3/3': expected I/N"):
        build_receiver(shard="3/3")
