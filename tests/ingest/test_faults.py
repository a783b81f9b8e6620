"""Fault tests against a real Prometheus: a worker killed mid-cycle, Prometheus down and back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from ingest.models import GpuHotSample, IngestCursor, PrometheusOutage
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_family
from simulator import Dialect
from tests.ingest.simulated import STEP, variant
from tests.support.processes import BASE_DIR, PAUSED, subprocess_env
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimulatedPrometheus]:
    with variant(tmp_path_factory.mktemp("faults"), dialects=(Dialect.DCGM,)) as p:
        yield p


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def steps_per_gpu(start: float, end: float) -> set[int]:
    """How many rows each GPU has in (start, end]: one value means no gap anywhere.

    Not counted: the GPU an XID 79 takes off the bus for 10 minutes (``small_cluster``: node
    0, GPU 2), which reports nothing then: a gap that is really there.
    """
    counts: dict[tuple[str, int], int] = {}
    rows = GpuHotSample.objects.filter(ts__gt=at(start), ts__lte=at(end))
    for node, gpu in rows.values_list("node__name", "gpu"):
        counts[(node, gpu)] = counts.get((node, gpu), 0) + 1
    gone = (sorted({node for node, _gpu in counts})[0], 2)
    assert counts.pop(gone) < max(counts.values())  # the gap is there, and not stored over
    return set(counts.values())


def test_a_worker_killed_mid_cycle_then_rerun_leaves_no_gap_and_no_duplicate(
    prom: SimulatedPrometheus,
) -> None:
    start, end = prom.end - 30 * 60, prom.end - STEP
    env = subprocess_env(
        **PAUSED,
        PROMETHEUS_URL=prom.prometheus.url,
        INGEST_CHUNK_STEPS="6",
        INGEST_CHUNK_PAUSE_SECONDS="10",
    )
    command = [sys.executable, "manage.py", "ingest", "--family", "gpu",
               "--since", at(start).isoformat(), "--until", at(end).isoformat()]  # fmt: skip
    worker = subprocess.Popen(
        command, cwd=BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while (
            not IngestCursor.objects.filter(family="gpu").exists() and time.monotonic() < deadline
        ):
            time.sleep(0.1)
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=10)
    partial = IngestCursor.objects.get(family="gpu").covered_until
    assert at(start) < partial < at(end)

    # The killed worker's session (and its advisory lock) ends as soon as Postgres notices.
    outcome = ingest_family(
        "gpu", until=at(end), client=PrometheusClient(prom.prometheus.url), lock_wait=10
    )

    assert outcome.status == "ok"
    assert outcome.window_start == partial  # resumed from the cursor
    assert steps_per_gpu(start, end) == {59}
    # Less 10 steps of the gone GPU: XID 79 takes it off the bus for 10 min (20 steps), of which the backend's 5-minute lookback carries 10 (its exporter still
    # answers, so its node's sample times stay fresh; docs/scaling.md "Scrape intervals").
    assert GpuHotSample.objects.count() == 4 * 8 * 59 - 10


def test_prometheus_outage_is_recorded_and_the_gap_filled(prom: SimulatedPrometheus) -> None:
    client = PrometheusClient(prom.prometheus.url)
    assert (
        ingest_family(
            "gpu", since=at(prom.end - 30 * 60), until=at(prom.end - 20 * 60), client=client
        ).status
        == "ok"
    )
    prom.prometheus.stop()
    try:
        down = ingest_family("gpu", until=at(prom.end - 10 * 60), client=client)
    finally:
        prom.prometheus.start()
    assert down.status == "error"
    assert PrometheusOutage.objects.get().ended_at is None

    back = ingest_family("gpu", until=at(prom.end - STEP), client=client)

    assert back.status == "ok"
    assert back.window_start == at(prom.end - 20 * 60)
    assert PrometheusOutage.objects.get().ended_at is not None
    assert steps_per_gpu(prom.end - 30 * 60, prom.end - STEP) == {59}
