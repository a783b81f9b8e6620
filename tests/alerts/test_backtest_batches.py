"""A backtest reads its candidate GPUs' series a batch at a time and reports what one read reports.

A 7-day ``gpu_tensor_drift`` backtest at 512 nodes held every candidate's whole series at
once: the kernel killed it at 24 GB (bench_storage, bench/RESULTS.md). ``backtest`` now lists
the prefilter's candidates, then reads ``ALERTS_BACKTEST_BATCH_POINTS`` steps' worth of GPUs at
a time; the rule's signals are per GPU, so the report must not change.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from django.test.utils import override_settings

from alerts import inputs
from alerts.backtest import backtest
from ingest.selectors import rule_inputs
from tests.alerts import seed
from tests.support.clock import pinned

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC).timestamp()  # pinned
#: (node, GPU) → the spans it drifts in (s, relative to NOW); over 10 min fires (for = 600 s)
DRIFTS = {
    ("gpu-001", 3): [(-3000, -2000)],
    ("gpu-001", 6): [(-1500, -1200)],  # 5 min: a candidate that never fires
    ("gpu-002", 0): [(-3500, -2800), (-1800, -600)],  # two alerts
    ("gpu-003", 7): [(-900, 0)],  # still drifting at NOW (15 min: fires)
}
FIRING = [("gpu-001", "3"), ("gpu-002", "0"), ("gpu-002", "0"), ("gpu-003", "7")]


@pytest.fixture(autouse=True)
def _now() -> Iterator[None]:
    with pinned(datetime.fromtimestamp(NOW, UTC)):
        yield


def drifting(node: str):  # noqa: ANN201
    """seed.gpu_rows values: the node's GPUs of DRIFTS drift in their spans, the rest healthy."""

    return seed.drifting(
        lambda ts, gpu: any(NOW + a <= ts < NOW + b for a, b in DRIFTS.get((node, gpu), []))
    )


@pytest.fixture
def cluster() -> None:
    made = seed.nodes(["gpu-001", "gpu-002", "gpu-003", "gpu-004"], ports=1)
    seed.run("llama", made.values(), NOW - 7200, NOW + 3600)
    for name, node in made.items():
        seed.write_gpu(seed.gpu_rows(node, NOW - 4000, NOW, **drifting(name)))
    seed.cover(NOW)


def test_one_gpu_per_batch_reports_what_one_batch_reports(cluster, monkeypatch) -> None:  # noqa: ANN001
    reads: list[list[tuple[int, int]]] = []
    real = rule_inputs.gpu_series_of

    def spy(bounds, keys):  # noqa: ANN001, ANN202
        reads.append(list(keys))
        return real(bounds, keys)

    monkeypatch.setattr(rule_inputs, "gpu_series_of", spy)
    with override_settings(ALERTS_BACKTEST_BATCH_POINTS=10**9):
        whole = backtest("gpu_tensor_drift", 3600, now=NOW)
    assert [len(keys) for keys in reads] == [4]  # the four candidates, in one read
    reads.clear()
    with override_settings(ALERTS_BACKTEST_BATCH_POINTS=1):
        batched = backtest("gpu_tensor_drift", 3600, now=NOW)
    assert [len(keys) for keys in reads] == [1, 1, 1, 1]

    labels = sorted((f.labels["node"], f.labels["gpu"]) for f in whole.fired)
    assert labels == FIRING
    assert batched.fired == whole.fired
    assert [f.summary for f in batched.fired] == [f.summary for f in whole.fired]


def test_a_batch_holds_about_the_points_asked(cluster, monkeypatch) -> None:  # noqa: ANN001
    sizes: list[int] = []
    real = rule_inputs.gpu_series_of

    def spy(bounds, keys):  # noqa: ANN001, ANN202
        sizes.append(len(keys))
        return real(bounds, keys)

    monkeypatch.setattr(rule_inputs, "gpu_series_of", spy)
    data = inputs.fetch(
        {"gpu_tensor_drift": seed_settings()}, now=NOW, span=3600, gpu_keys_only=True
    )
    window = data.as_of_family("gpu") - data.window_starts["gpu"]
    steps = window / data.step
    points = [len(batch) for batch in inputs.gpu_batches(data, int(2 * steps))]
    assert sizes == [2, 2]  # two GPUs' steps per batch: 4 candidates in 2 reads
    assert data.gpu == [] and len(data.gpu_keys) == 4
    assert sum(points) == len(rule_inputs.gpu_series_of(
        [data.window_starts["gpu"], data.as_of_family("gpu")], data.gpu_keys
    ))  # fmt: skip


def seed_settings():  # noqa: ANN201
    from alerts.rules import get_rule

    return get_rule("gpu_tensor_drift").defaults()._replace(enabled=True)
