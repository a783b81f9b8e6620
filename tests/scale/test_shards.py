"""Sharded ingest in one process: shard plans, scoped PromQL, and the same rows as an unsharded ingest."""

from __future__ import annotations

import pytest
from django.test.utils import override_settings

from ingest import services, shards
from ingest.models import IngestCursor, ShardCursor
from ingest.prometheus import PrometheusClient
from tests.scale.conftest import FAMILIES, dump_rows, forget_ingest, history_point
from tests.support.prometheus import SimulatedPrometheus

METRICS = {"DCGM_FI_DEV_GPU_UTIL", "kube_pod_info"}


def test_scope_adds_the_matcher_to_every_known_metric_selector() -> None:
    promql = 'max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL) and on () kube_pod_info{a="b"}'
    scoped = shards.scope(promql, 'Hostname=~"gpu-001"', METRICS)
    assert scoped == (
        'max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL{Hostname=~"gpu-001"}) '
        'and on () kube_pod_info{Hostname=~"gpu-001",a="b"}'
    )


def test_scope_leaves_labels_and_strings_alone() -> None:
    promql = 'max by (DCGM_FI_DEV_GPU_UTIL_x) (up{job="DCGM_FI_DEV_GPU_UTIL"})'
    assert shards.scope(promql, 'x="y"', METRICS) == promql


def test_regex_matcher_escapes_metacharacters() -> None:
    matcher = shards.regex_matcher("instance", ["b.host:9100", "a+b"])
    assert matcher == 'instance=~"a\\\\+b|b\\\\.host:9100"'


def test_shard_of_is_stable_and_spreads_nodes() -> None:
    names = [f"gpu-{i:04d}" for i in range(4096)]
    counts = [0] * 8
    for name in names:
        counts[shards.shard_of(name, 8)] += 1
    assert shards.shard_of("gpu-0001", 8) == shards.shard_of("gpu-0001", 8)
    assert min(counts) > 4096 / 8 * 0.8


def _inline(orders: list[shards.ShardOrder]) -> None:
    for order in orders:
        assert shards.ingest_shard(order).status in {"ok", "idle"}


@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("ingest_settings")
def test_sharded_cycle_stores_what_one_unsharded_cycle_stores(
    sharded_prometheus: SimulatedPrometheus,
) -> None:
    until = history_point(sharded_prometheus, 60)
    with override_settings(INGEST_SHARDS=4):
        statuses = shards.run_cycle(_inline, until=until, families=FAMILIES)
    assert statuses == {"gpu": "sharded:4", "ib": "sharded:4"}
    assert ShardCursor.objects.filter(shards=4, covered_until=until).count() == 8
    assert set(IngestCursor.objects.values_list("family", "covered_until")) == {
        ("gpu", until),
        ("ib", until),
    }
    sharded = dump_rows()
    forget_ingest()
    services.ingest_all(until=until, families=FAMILIES, client=PrometheusClient())
    assert sharded["gpu"] and sharded["ib"] and sharded["xid"] and sharded["rollup"]
    assert sharded == dump_rows()


@pytest.mark.prometheus
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("ingest_settings")
def test_a_shard_behind_holds_the_family_cursor_back(
    sharded_prometheus: SimulatedPrometheus,
) -> None:
    first, second = history_point(sharded_prometheus, 600), history_point(sharded_prometheus, 60)
    client = PrometheusClient()
    orders = shards.plan_orders("gpu", client, first, 2)
    _inline(orders)
    later = shards.plan_orders("gpu", client, second, 2)
    _inline(later[:1])  # shard 1 "lost its worker": only shard 0 runs the next cycle
    assert IngestCursor.objects.get(family="gpu").covered_until == first
    _inline(later[1:])
    assert IngestCursor.objects.get(family="gpu").covered_until == second


@pytest.mark.prometheus
@pytest.mark.django_db
@pytest.mark.usefixtures("ingest_settings")
def test_a_shard_queries_only_its_nodes(sharded_prometheus: SimulatedPrometheus) -> None:
    client = PrometheusClient()
    orders = shards.plan_orders("gpu", client, history_point(sharded_prometheus, 60), 4)
    seen: list[str] = []
    for order in orders:
        assert order["label"] == "Hostname"
        scoped = shards.ScopedClient(client, shards.regex_matcher("Hostname", order["values"]))
        answer = scoped.query("max by (Hostname) (DCGM_FI_DEV_GPU_UTIL)")
        names = sorted(series.labels["Hostname"] for series in answer.series)
        assert names == order["values"]
        seen += names
    # Hostname is each node's dcgm-exporter pod name: the shard selects those label values.
    nodes = sharded_prometheus.cluster.nodes
    assert sorted(seen) == sorted(sharded_prometheus.hostname(node.name) for node in nodes)
