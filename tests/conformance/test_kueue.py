"""Kueue v0.19.2 metrics (fixtures/kueue_*.prom) → real Prometheus → ingest: wait quantiles, evictions.

Between scrape ``a`` and ``b`` ten workloads are admitted, after waits in the 40–80 s (2),
80–160 s (4), 160–320 s (3) and 320–640 s (1) buckets, and one is preempted.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ingest.models import KueueEviction, KueueSample
from simulator.queues import WAIT_BUCKETS
from tests.conformance.scrapes import T0, Scrape, at, backfilled, ingest
from tests.support.prometheus import PrometheusProcess
from tests.support.timeseries import truncate_timeseries

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    target = ("kueue-controller-manager", "10.42.0.9:8443")
    scrapes = [
        Scrape("kueue_a.prom", T0, T0 + 300, *target),
        Scrape("kueue_b.prom", T0 + 300, T0 + 600, *target),
    ]
    with backfilled(tmp_path_factory.mktemp("kueue"), scrapes) as prometheus:
        yield prometheus


def test_wait_quantiles_come_from_kueues_real_buckets(kueue: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(kueue, ["kueue"], T0 + 60, T0 + 570)
    sample = KueueSample.objects.get(cluster_queue__name="training", ts=at(T0 + 300))
    # p50: rank 5 of 10 in (80, 160] holding 4 after 2 → 80 + 80·3/4; p95: rank 9.5 in (320, 640].
    assert (sample.wait_p50, sample.wait_p95) == (140.0, 480.0)
    assert (sample.admitted, sample.pending_active, sample.pending_inadmissible) == (10.0, 1.0, 0.0)
    quiet = KueueSample.objects.filter(cluster_queue__name="training").exclude(ts=at(T0 + 300))
    assert set(quiet.values_list("wait_p50", "wait_p95", "admitted")) == {(None, None, 0.0)}
    assert quiet.count() == 16


def test_evictions_keep_the_reason_across_priority_classes(kueue: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(kueue, ["kueue"], T0 + 60, T0 + 570)
    assert list(
        KueueEviction.objects.values_list("cluster_queue__name", "ts", "kind", "reason", "count")
    ) == [("training", at(T0 + 300), "evicted", "Preempted", 1.0)]


def test_the_simulator_uses_the_same_buckets() -> None:
    assert WAIT_BUCKETS == (1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0,
                            2560.0, 5120.0, 10240.0, 20480.0, 40960.0)  # fmt: skip
