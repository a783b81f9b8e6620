"""Kueue normalisation from recorded answers: exact per-step values, NaN/Inf, missing labels, HTML."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from ingest.models import ClusterQueue, KueueEviction, KueueQuota
from ingest.sources.kueue import KueueSource
from ingest.stepseries import counter_increases, histogram_quantile, to_datetime
from tests.ingest.recorded_client import T0, RecordedClient, window

INF = float("inf")


def test_counter_increases_handle_resets_new_series_and_gaps() -> None:
    points = [(0.0, 10.0), (30.0, 12.0), (90.0, 15.0), (120.0, 1.0)]
    assert counter_increases(points, 0.0) == [(30.0, 2.0), (90.0, 3.0), (120.0, 1.0)]
    assert counter_increases([(60.0, 4.0)], 0.0) == [(60.0, 4.0)]


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    buckets = [(10.0, 1.0), (60.0, 2.0), (INF, 2.0)]
    assert histogram_quantile(0.5, buckets) == 10.0
    assert histogram_quantile(0.95, buckets) == pytest.approx(55.0)
    assert histogram_quantile(0.5, [(10.0, 0.0), (60.0, 0.0), (INF, 1.0)]) == 60.0
    assert histogram_quantile(0.5, [(10.0, 0.0), (INF, 0.0)]) is None
    assert histogram_quantile(0.5, [(10.0, 3.0), (60.0, 3.0)]) is None


def test_pull_computes_each_step_from_the_baseline() -> None:
    batch = KueueSource().pull(RecordedClient("kueue_window.json"), window())
    samples = batch.payload.samples
    assert samples[("cq-a", T0 + 30)] == {
        "pending_active": 4.0, "pending_inadmissible": 1.0, "admitted_active": 5.0,
        "admitted": 2.0, "wait_p50": 10.0, "wait_p95": pytest.approx(55.0),
    }  # fmt: skip
    assert "pending_active" not in samples[("cq-a", T0 + 60)]  # NaN skipped
    assert samples[("cq-a", T0 + 60)]["admitted"] == 0.0
    assert "wait_p50" not in samples[("cq-a", T0 + 60)]  # no admissions in the step
    assert samples[("cq-a", T0 + 90)]["admitted"] == 1.0  # counter reset
    assert samples[("cq-a", T0 + 90)]["wait_p50"] == 60.0
    assert "admitted_active" not in samples[("cq-a", T0 + 90)]  # +Inf skipped
    assert ("cq-a", T0) not in samples  # the baseline is not a step of this window
    assert batch.payload.evictions == {
        ("cq-a", T0 + 60, "evicted", "Preempted"): 2.0,
        ("cq-b", T0 + 90, "evicted", "PodsReadyTimeout"): 1.0,
        ("cq-b", T0 + 60, "preempted", "InCohortReclamation"): 2.0,
    }
    # NaN + Inf points, the pending series without cluster_queue and the bucket without le.
    assert batch.skipped == 4


@pytest.mark.django_db
def test_store_writes_once_and_keeps_hostile_names_verbatim() -> None:
    source = KueueSource()
    batch = source.pull(RecordedClient("kueue_window.json"), window())
    with transaction.atomic():
        first = source.store(batch).rows
    with transaction.atomic():
        again = source.store(source.pull(RecordedClient("kueue_window.json"), window())).rows
    assert first == 4 + 3 + 3 and again == 0  # samples (3 cq-a, 1 hostile), evictions, quota
    assert ClusterQueue.objects.get(name="cq-a").cohort == "training"
    assert ClusterQueue.objects.filter(name="<script>alert(1)</script>").exists()
    assert KueueEviction.objects.count() == 3
    quota = KueueQuota.objects.get(cluster_queue__name="cq-a", ts=to_datetime(T0 + 90))
    assert (quota.usage, quota.nominal) == (24.0, 64.0)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT admitted, wait_p95 FROM ingest_kueuesample s JOIN ingest_clusterqueue q "
            "ON q.id = s.cluster_queue_id WHERE q.name = 'cq-a' ORDER BY ts"
        )
        assert cursor.fetchall() == [(2.0, pytest.approx(55.0)), (0.0, None), (1.0, 60.0)]
