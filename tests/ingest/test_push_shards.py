"""Several push receivers: a real Prometheus, configured with ``push_config.remote_write_block``
(docs/push.md "Several receivers"), forwards each receiver exactly its hashmod shard.

Prometheus (remote-write receiver on, so the test can give it samples; its WAL watcher sends
only samples newer than its own start, so they are stamped from a second after it started)
takes 12 exporters' series, 3 kept metrics each and one it must not forward, and forwards
to two ``Receiver`` servers (shard 0/2 and 1/2 of ``hashmod(instance)``). Each receiver
must get exactly the series its own hash (``push_store.hashmod``) assigns it, none of
another's (``misrouted``), without the temporary shard label, and nothing ingest does not
read; the two together every kept series. docs/push.md's block is this function's output.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.push_config import SHARD_LABEL, remote_write_block
from ingest.push_receiver import Receiver, serve
from ingest.push_store import PushStore, hashmod
from tests.support.processes import wait_until
from tests.support.prometheus import require_prometheus
from tests.support.remote_write import receiver_prometheus, remote_write

pytestmark = pytest.mark.prometheus
TOKEN = "shards-test-token"
KEEP = r"DCGM_FI_.*|dcgm_.*|node_infiniband_.*|infiniband_.*"
KEPT = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "node_infiniband_port_data_transmitted_bytes_total")  # fmt: skip
INSTANCES = [f"10.128.{n}.9:9400" for n in range(12)]


@pytest.fixture
def receivers() -> Iterator[list[tuple[Receiver, str]]]:
    made = []
    for index in range(2):
        store = PushStore(300_000, 3_600_000, 15_000, 0, re.compile(KEEP), shard=(index, 2))
        one = Receiver(store, TOKEN, max_bytes=1 << 24)
        server = serve(one, "127.0.0.1", 0, sender_url=None, check_seconds=5, timeout=5)
        made.append((one, server))
    try:
        yield [(one, f"http://127.0.0.1:{server.server_port}") for one, server in made]
    finally:
        for _one, server in made:
            server.shutdown()
            server.server_close()


def test_a_real_prometheus_sends_each_receiver_its_shard(
    receivers: list[tuple[Receiver, str]], tmp_path: Path
) -> None:
    require_prometheus()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    block = remote_write_block([url for _, url in receivers], KEEP, str(token_file))
    prometheus = receiver_prometheus(tmp_path, block, timeout=60)
    try:
        first = round(time.time() * 1000) + 1000
        series = {
            (("__name__", name), ("gpu", "0"), ("instance", instance), ("job", "dcgm")): [
                (first + step * 1000, float(n + step)) for step in range(2)
            ]
            for n, instance in enumerate(INSTANCES)
            for name in (*KEPT, "node_cpu_seconds_total")
        }
        time.sleep(max(0.0, first / 1000 - time.time()))
        remote_write(prometheus.url, series)
        wanted = {key: samples for key, samples in series.items() if key[0][1] in KEPT}
        expected = len(wanted) * 2
        wait_until(
            lambda: sum(one.store.counters.samples_received for one, _ in receivers) >= expected,
            60,
            "Prometheus to forward every kept sample",
            interval=0.2,
        )
    finally:
        prometheus.stop()
    held = []
    for index, (one, _url) in enumerate(receivers):
        store = one.store
        assert (store.counters.misrouted, store.counters.samples_ignored) == (0, 0)
        got = {pairs: samples for pool in store.by_name.values() for pairs, samples in pool.items()}
        mine = {
            tuple(sorted(key)): [(t, v) for t, v in samples]
            for key, samples in wanted.items()
            if hashmod(dict(key)["instance"], 2) == index
        }
        assert mine, f"shard {index} of these instances is empty: pick others"
        assert {pairs: list(samples) for pairs, samples in got.items()} == mine
        assert not any(label == SHARD_LABEL for pairs in got for label, _ in pairs)
        held += list(got)
    assert sorted(held) == sorted(tuple(sorted(key)) for key in wanted)


def test_docs_show_the_block_for_two_receivers() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "push.md").read_text()
    block = remote_write_block(
        ["http://clusterwatch-push-0:9201", "http://clusterwatch-push-1:9201"],
        KEEP,
        "/etc/prometheus/clusterwatch-push-token",
    )
    assert f"```yaml\n{block}```" in docs
    single = remote_write_block(
        ["http://clusterwatch-push:9201"], KEEP, "/etc/prometheus/clusterwatch-push-token"
    )
    assert f"```yaml\n{single}```" in docs.replace("\n   ", "\n")
