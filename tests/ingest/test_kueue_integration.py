"""Kueue against a real Prometheus holding simulator history: exact stored values for a queue."""

from __future__ import annotations

import pytest
from django.db import transaction

from ingest.models import ClusterQueue, KueueQuota, KueueSample
from ingest.prometheus import PrometheusClient
from ingest.sources.base import Window
from ingest.sources.kueue import KueueSource
from ingest.stepseries import to_datetime
from simulator.queues import QueueModel
from simulator.topology import QUEUES
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]


def test_stored_values_equal_the_simulated_queue(scenario_prometheus: SimulatedPrometheus) -> None:
    prom = scenario_prometheus
    start, end = prom.start + 600, prom.end - 30
    source = KueueSource()
    batch = source.pull(
        PrometheusClient(prom.prometheus.url), Window(to_datetime(start), to_datetime(end), 30)
    )
    with transaction.atomic():
        assert source.store(batch).rows > 0
    with transaction.atomic():
        assert source.store(batch).rows == 0
    queue, model = QUEUES[0], QueueModel(prom.cluster)
    stored = {s.ts: s for s in KueueSample.objects.filter(cluster_queue__name=queue.cluster_queue)}
    assert len(stored) == (end - start) // 30
    for ts in (start + 30, start + 1230, end - 600, end):
        now, before = model.status(queue, ts), model.status(queue, ts - 30)
        sample = stored[to_datetime(ts)]
        assert sample.pending_active == now.pending
        assert sample.pending_inadmissible == 0
        assert sample.admitted_active == now.admitted_active
        assert sample.admitted == now.admitted_total - before.admitted_total
    assert ClusterQueue.objects.get(name=queue.cluster_queue).cohort == queue.cohort
    quota = KueueQuota.objects.filter(cluster_queue__name=queue.cluster_queue).latest("ts")
    assert quota.nominal == model.status(queue, end).nominal_gpus


def test_admission_wait_quantiles_lie_in_the_admissions_bucket(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom = scenario_prometheus
    source = KueueSource()
    window = Window(to_datetime(prom.start), to_datetime(prom.end - 30), 30)
    with transaction.atomic():
        source.store(source.pull(PrometheusClient(prom.prometheus.url), window))
    with_admissions = KueueSample.objects.filter(admitted__gt=0)
    assert with_admissions.exists()
    assert all(s.wait_p50 is not None and 0 < s.wait_p50 <= s.wait_p95 for s in with_admissions)
    assert not KueueSample.objects.filter(admitted=0, wait_p50__isnull=False).exists()
