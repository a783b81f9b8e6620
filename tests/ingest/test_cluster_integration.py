"""Cluster membership against a real Prometheus holding simulator history (pool_flip scenario)."""

from __future__ import annotations

import pytest
from django.db import transaction

from ingest.models import Node, PoolChange
from ingest.prometheus import PrometheusClient
from ingest.sources.base import Window
from ingest.sources.kube_state import ClusterSource
from ingest.stepseries import to_datetime
from simulator import FaultKind
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]


def test_pool_flip_is_two_pool_changes(scenario_prometheus: SimulatedPrometheus) -> None:
    prom = scenario_prometheus
    flip = next(f for f in prom.cluster.spec.faults if f.kind == FaultKind.POOL_FLIP)
    start, end = flip.start.timestamp(), flip.end.timestamp()
    source = ClusterSource()
    client = PrometheusClient(prom.prometheus.url)
    for a, b in ((prom.start, start + 300), (start + 300, prom.end - 30)):
        with transaction.atomic():
            source.store(source.pull(client, Window(to_datetime(a), to_datetime(b), 30)))
    node = Node.objects.get(name=flip.nodes[0])
    changes = [(c.ts, c.pool) for c in PoolChange.objects.filter(node=node).order_by("ts")]
    assert changes == [
        (to_datetime(prom.start), "inference"),
        (to_datetime(start), "training"),
        (to_datetime(end), "inference"),
    ]
    assert node.pool == "inference"
    assert Node.objects.count() == len(prom.cluster.nodes)
    untouched = PoolChange.objects.exclude(node=node)
    assert untouched.count() == len(prom.cluster.nodes) - 1  # one initial pool each
