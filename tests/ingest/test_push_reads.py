"""Ingest's side of push mode: queries batched so each answer fits PROMETHEUS_MAX_ANSWER_BYTES."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import requests
from django.test import override_settings

from ingest import push_reads
from ingest.prometheus import PrometheusClient
from ingest.push_receiver import Receiver, serve
from ingest.push_store import PushStore
from tests.support.remote_write import post_bodies, write_requests

T = 1_772_452_800_000
TOKEN = "s3cret-push-token"
METRICS = [f"DCGM_FI_DEV_F{n}" for n in range(4)]
END = datetime.fromtimestamp((T + 900_000) / 1000, UTC)
START = datetime.fromtimestamp((T + 600_000) / 1000, UTC)
QUERIES = [(f"max by (Hostname, gpu) ({name})", START) for name in METRICS]


@pytest.fixture
def receiver_url() -> Iterator[str]:
    store = PushStore(300_000, 3_600_000, 15_000, T, re.compile(r"DCGM_FI_.*"))
    made = Receiver(store, TOKEN, max_bytes=1 << 24, clock=lambda: (T + 1_000_000) / 1000)
    made.sender_seen(T - 60_000)
    server = serve(made, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=5)
    url = f"http://127.0.0.1:{server.server_port}"
    series = {
        (("Hostname", f"gpu-{n:03d}"), ("__name__", name), ("gpu", str(g))): [
            (T + s * 30_000, float(n * 10 + g + s)) for s in range(31)
        ]
        for name in METRICS
        for n in range(20)
        for g in range(8)
    }
    post_bodies(url, write_requests(series), headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()


def answer_bytes(url: str, queries: int) -> int:
    """The size of the receiver's answer to the first ``queries`` queries."""
    payload = {
        "step": 30,
        "end": round(END.timestamp()),
        "closed": True,
        "queries": [
            {
                "start": round(START.timestamp()),
                "by": ["Hostname", "gpu"],
                "selectors": [[[0, "__name__", name]]],
            }
            for name in METRICS[:queries]
        ],
    }
    answer = requests.post(
        f"{url}/api/v1/steps",
        json=payload,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert answer.status_code == 200
    return len(answer.content)


def read(url: str, cap: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list, int]:
    """(results in order, queries pulled from Prometheus, requests made) with ``cap`` bytes."""
    monkeypatch.setitem(push_reads.BATCH, "queries", 64)
    pulled: list = []

    def pull(some, until, offset):  # noqa: ANN001, ANN202
        pulled.extend(promql for promql, _start in some)
        for index, _query in enumerate(some):
            yield offset + index, []

    before = push_reads.STATS["requests"]
    with override_settings(
        INGEST_PUSH_URL=url, INGEST_PUSH_TOKEN=TOKEN, PROMETHEUS_MAX_ANSWER_BYTES=cap
    ):
        client = PrometheusClient("http://127.0.0.1:9")
        results = list(push_reads.read_pushed(client, QUERIES, END, 30.0, True, pull))
    return results, pulled, push_reads.STATS["requests"] - before


def test_answers_over_the_cap_are_asked_again_in_halves(
    receiver_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, pulled, asked = read(receiver_url, 1 << 24, monkeypatch)
    assert (pulled, asked, push_reads.BATCH["queries"]) == ([], 1, 64)
    assert [index for index, _ in whole] == [0, 1, 2, 3]
    first = whole[0][1]
    assert len(first) == 160  # 20 nodes x 8 GPUs, each with the 11 steps 600..900 s
    assert first[0] == {
        "metric": {"Hostname": "gpu-000", "gpu": "0"},
        "values": [
            [(T + ms) / 1000, f"{ms // 30_000:.1f}"] for ms in range(600_000, 900_001, 30_000)
        ],
    }
    one = answer_bytes(receiver_url, 1)
    assert one < answer_bytes(receiver_url, 2) < 2 * one + 100  # each query's answer the same size
    # A cap between one answer and two takes one query per request.
    halved, pulled, asked = read(receiver_url, one + one // 2, monkeypatch)
    assert halved == whole
    assert pulled == []
    assert push_reads.BATCH["queries"] == 1
    assert asked == 1 + 1 + 4  # 4 queries: too large; 2: too large; then 1 at a time


def test_a_query_too_large_alone_is_read_from_prometheus(
    receiver_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = push_reads.STATS["failures"]
    results, pulled, asked = read(receiver_url, answer_bytes(receiver_url, 1) - 1, monkeypatch)
    assert pulled == [promql for promql, _ in QUERIES]
    assert results == [(0, []), (1, []), (2, []), (3, [])]  # what the stand-in pull answers
    assert asked == 3 + 3  # 4, 2, 1 queries, then each remaining query alone
    assert push_reads.STATS["failures"] - failures == 4


def test_answers_of_several_receivers_are_merged_max_per_step_minus_any_uncovered_step() -> None:
    a = {"metric": {"Hostname": "gpu-000", "gpu": "0"}}
    b = {"metric": {"Hostname": "gpu-001", "gpu": "0"}}
    first = {
        "result": [
            b | {"values": [[1.0, "5"], [2.0, "NaN"], [3.0, "1"]]},
            a | {"values": [[1.0, "1"], [4.0, "9"]]},
        ],
        "uncovered": [(4000, 4000)],
    }
    second = {
        "result": [b | {"values": [[1.0, "2"], [2.0, "7"], [3.0, "+Inf"], [5.0, "3"]]}],
        "uncovered": [(5000, 6000), (9000, 9000)],
    }
    merged = push_reads.combined([first, second], 1000)
    # 4 s and 5-6 s are uncovered by one of them (read from Prometheus for every series):
    # runs one step apart are joined; at 2 s the number beats the NaN.
    assert merged == {
        "result": [
            a | {"values": [[1.0, "1"]]},
            b | {"values": [[1.0, "5"], [2.0, "7"], [3.0, "+Inf"]]},
        ],
        "uncovered": [(4000, 6000), (9000, 9000)],
    }
    assert push_reads.combined([{"result": [], "uncovered": []}] * 2, 1000) == {
        "result": [],
        "uncovered": [],
    }


def _sharded(shards: list[tuple[int, int]], stack: list) -> str:
    """Receivers holding their ``Hostname`` shards of 20 nodes' series; their URLs, joined."""
    series = {
        (("Hostname", f"gpu-{n:03d}"), ("__name__", METRICS[0]), ("gpu", "0")): [
            (T + s * 30_000, float(n + s)) for s in range(31)
        ]
        for n in range(20)
    }
    urls = []
    for shard in shards:
        store = PushStore(
            300_000, 3_600_000, 15_000, T, re.compile(r"DCGM_FI_.*"),
            shard=shard, shard_label="Hostname",
        )  # fmt: skip
        made = Receiver(store, TOKEN, max_bytes=1 << 24, clock=lambda: (T + 1_000_000) / 1000)
        made.sender_seen(T - 60_000)
        server = serve(made, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=5)
        stack.append(server)
        urls.append(f"http://127.0.0.1:{server.server_port}")
        mine = {key: samples for key, samples in series.items() if store._ours(key)}
        post_bodies(urls[-1], write_requests(mine), headers={"Authorization": f"Bearer {TOKEN}"})
        assert mine and store.counters.misrouted == 0
    return ",".join(urls)


@pytest.mark.parametrize(
    ("shards", "pushed"),
    [
        ([(0, 2), (1, 2)], True),
        ([(1, 2), (0, 2)], True),  # any order
        ([(0, 2), (0, 2)], False),  # shard 1 missing
        ([(0, 3), (1, 3)], False),  # shard 2 of 3 not asked
        ([(0, 2)], False),  # one URL, but a sharded receiver
    ],
)
def test_receivers_answer_only_as_a_complete_set_of_shards(
    shards: list[tuple[int, int]], pushed: bool
) -> None:
    stack: list = []
    try:
        urls = _sharded(shards, stack)
        pulled: list = []

        def pull(some, until, offset):  # noqa: ANN001, ANN202
            pulled.extend(promql for promql, _start in some)
            for index, _query in enumerate(some):
                yield offset + index, []

        with override_settings(INGEST_PUSH_URL=urls, INGEST_PUSH_TOKEN=TOKEN):
            client = PrometheusClient("http://127.0.0.1:9")
            results = list(push_reads.read_pushed(client, QUERIES[:1], END, 30.0, True, pull))
    finally:
        for server in stack:
            server.shutdown()
            server.server_close()
    if not pushed:
        assert (pulled, results) == ([QUERIES[0][0]], [(0, [])])
        return
    assert pulled == []
    ((index, result),) = results
    assert index == 0
    assert [item["metric"]["Hostname"] for item in result] == [f"gpu-{n:03d}" for n in range(20)]
    assert result[3]["values"] == [
        [(T + ms) / 1000, f"{3 + ms // 30_000:.1f}"] for ms in range(600_000, 900_001, 30_000)
    ]
