"""Cluster membership from recorded answers: pools from taints, pool changes, cordons, HTML names."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import override_settings

from ingest.models import Node, PoolChange
from ingest.sources.kube_state import ClusterSource, pool_of
from ingest.stepseries import to_datetime
from tests.ingest.recorded_client import T0, RecordedClient, window

HOSTILE = "<img src=x onerror=alert(1)>"


def test_pool_of_follows_the_rules_in_order() -> None:
    rules = {"node-pool": "", "dedicated=inference": "inference"}
    assert pool_of([("node-pool", "Training")], rules, "unknown") == "training"
    assert pool_of([("dedicated", "inference")], rules, "unknown") == "inference"
    assert pool_of([("dedicated", "gpu"), ("node-pool", "batch")], rules, "unknown") == "unknown"
    assert pool_of([], rules, "training") == "training"


def test_pull_records_pool_changes_and_skips_unlabelled_and_nan_points() -> None:
    batch = ClusterSource().pull(RecordedClient("cluster_window.json"), window())
    nodes = batch.payload
    assert nodes["gpu-002"].pools == [(T0, "training"), (T0 + 60, "inference")]
    assert nodes["gpu-001"].unschedulable is True
    assert nodes[HOSTILE].pools == [(T0 + 30, "inference")]
    assert batch.skipped == 2


@pytest.mark.django_db
def test_store_writes_pool_changes_once() -> None:
    source = ClusterSource()
    with transaction.atomic():
        first = source.store(source.pull(RecordedClient("cluster_window.json"), window())).rows
    with transaction.atomic():
        again = source.store(source.pull(RecordedClient("cluster_window.json"), window())).rows
    assert (first, again) == (4, 0)
    flips = PoolChange.objects.filter(node__name="gpu-002").order_by("ts")
    assert [(c.ts, c.pool) for c in flips] == [
        (to_datetime(T0), "training"),
        (to_datetime(T0 + 60), "inference"),
    ]
    gpu1, gpu2 = Node.objects.get(name="gpu-001"), Node.objects.get(name="gpu-002")
    assert (gpu1.pool, gpu1.unschedulable, gpu2.pool, gpu2.unschedulable) == (
        "training",
        True,
        "inference",
        False,
    )
    assert (gpu1.first_seen, gpu1.last_seen) == (to_datetime(T0), to_datetime(T0 + 90))
    assert Node.objects.get(name=HOSTILE).pool == "inference"


@pytest.mark.django_db
@override_settings(INGEST_POOL_TAINTS={"dedicated": ""}, INGEST_POOL_DEFAULT="training")
def test_pool_taints_are_configurable() -> None:
    source = ClusterSource()
    with transaction.atomic():
        source.store(source.pull(RecordedClient("cluster_window.json"), window()))
    assert set(Node.objects.values_list("pool", flat=True)) == {"training"}
