"""The /api/v1/ JSON endpoints: shapes, exact values, validation, query counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlencode

import pytest
from django.core.cache import cache
from django.test import Client

from ingest.models import IngestCursor
from tests.dashboard.factories import (
    DRIFT_TENSOR,
    DRIFT_UTIL,
    TENSOR,
    TX_PER_PORT,
    UTIL,
    Cluster,
    align,
    make_cluster,
    make_queues,
    write_samples,
)

pytestmark = pytest.mark.django_db


def iso(moment) -> str:  # noqa: ANN001
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def heatmap(client: Client, **params: object):  # noqa: ANN201
    return client.get("/api/v1/heatmap?" + urlencode(params))


def test_heatmap_answers_the_documented_shape_with_exact_values(
    logged_in_client: Client, cluster: Cluster
) -> None:
    response = heatmap(
        logged_in_client,
        metric="gpu_util",
        start=iso(cluster.start),
        end=iso(cluster.end),
        step=300,
    )
    assert response.status_code == 200
    body = response.json()
    assert list(body) == [
        "metric",
        "unit",
        "start",
        "end",
        "step",
        "nodes",
        "times",
        "values",
        "marks",
    ]
    assert body["metric"] == "gpu_util" and body["unit"] == "%" and body["step"] == 300
    assert body["start"] == iso(cluster.start) and body["end"] == iso(cluster.end)
    assert body["nodes"] == cluster.nodes
    assert body["times"] == [iso(cluster.start + timedelta(minutes=5 * i)) for i in range(12)]
    expected = {name: DRIFT_UTIL if name == cluster.drift_node else UTIL for name in cluster.nodes}
    assert body["values"] == [[expected[name]] * 12 for name in body["nodes"]]


def test_heatmap_drift_is_util_minus_tensor_and_worst_sort_puts_the_drift_node_first(
    logged_in_client: Client, cluster: Cluster
) -> None:
    body = heatmap(logged_in_client, metric="drift", start=iso(cluster.start), end=iso(cluster.end), step=300,
                   sort="worst").json()  # fmt: skip
    assert body["nodes"][0] == cluster.drift_node
    assert body["values"][0][0] == pytest.approx(DRIFT_UTIL / 100 - DRIFT_TENSOR)
    assert body["values"][1][0] == pytest.approx(UTIL / 100 - TENSOR)
    assert body["unit"] == "ratio"


def test_heatmap_raw_resolution_sums_ports_and_sorts_by_topology(
    logged_in_client: Client, cluster: Cluster
) -> None:
    start = cluster.end - timedelta(minutes=10)
    body = heatmap(logged_in_client, metric="ib_tx", start=iso(start), end=iso(cluster.end), step=60,
                   sort="topology").json()  # fmt: skip
    assert len(body["times"]) == 10 and body["unit"] == "B/s"
    assert body["values"][0] == [TX_PER_PORT * cluster.ports] * 10
    leaves = ["leaf-1", "leaf-1", "leaf-2", "leaf-2"]  # leaf-(4 - i) % 3 for i = 0..3 → 1, 0, 2, 1
    assert body["nodes"][0] in {
        cluster.nodes[0],
        cluster.nodes[1],
        cluster.nodes[2],
        cluster.nodes[3],
    }
    assert len(leaves) == len(body["nodes"])


def test_heatmap_window_picks_the_step_from_the_plot_width(
    logged_in_client: Client, cluster: Cluster, fixed_epoch: datetime
) -> None:
    wide = heatmap(logged_in_client, metric="ib_errors", window="24h", width=1200).json()
    narrow = heatmap(logged_in_client, metric="ib_errors", window="24h", width=300).json()
    assert wide["step"] == 300 and len(wide["times"]) == 288
    assert narrow["step"] == 900 and len(narrow["times"]) == 96
    erring = wide["values"][wide["nodes"].index(cluster.error_node)]
    assert sum(v or 0 for v in erring) == 120  # one error per 30 s sample for an hour


@pytest.mark.parametrize(
    ("params", "parameter"),
    [
        ({"metric": "bogus"}, "metric"),
        ({"window": "3h"}, "window"),
        ({"sort": "random"}, "sort"),
        ({"start": "yesterday", "end": "2025-01-01T00:00:00Z"}, "start"),
        ({"start": "2025-01-01T00:00:00Z"}, "end"),
        ({"start": "2025-01-02T00:00:00Z", "end": "2025-01-01T00:00:00Z"}, "end"),
        ({"start": "2025-01-01T00:00:00Z", "end": "2025-03-01T00:00:00Z"}, "start"),
        ({"width": "wide"}, "width"),
    ],
)
def test_heatmap_bad_parameters_answer_400_naming_the_parameter(
    logged_in_client: Client, params: dict[str, str], parameter: str
) -> None:
    response = heatmap(logged_in_client, **params)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "bad_request" and body["parameter"] == parameter and body["detail"]


def test_heatmap_queries_are_bounded(
    logged_in_client: Client, cluster: Cluster, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    # user, cursor, SET float digits, cells, RESET, node names, alerts: none per node or column
    with django_assert_max_num_queries(7):
        assert heatmap(logged_in_client, metric="ib_tx", window="6h").status_code == 200


def test_api_needs_authentication(client: Client) -> None:
    response = client.get("/api/v1/heatmap")
    assert response.status_code == 401 and response.json()["error"] == "unauthorized"


def test_rails_has_one_cell_per_port(logged_in_client: Client, cluster: Cluster) -> None:
    body = logged_in_client.get(
        "/api/v1/rails?"
        + urlencode({"metric": "ib_errors", "start": iso(cluster.start), "end": iso(cluster.end)})
    ).json()
    assert body["ports"] == ["mlx5_0", "mlx5_1"] and body["nodes"] == cluster.nodes
    row = body["values"][body["nodes"].index(cluster.error_node)]
    assert row == [0.0, 120.0]
    assert logged_in_client.get("/api/v1/rails?metric=gpu_util").status_code == 400


def test_overview_counts_states_and_reports_drift_hours(
    logged_in_client: Client, cluster: Cluster, fixed_epoch: datetime, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    with django_assert_max_num_queries(15):
        body = logged_in_client.get("/api/v1/overview").json()
    assert body["nodes"]["total"] == 4
    assert body["nodes"]["by_state"] == {
        "healthy": 4,
        "warning": 0,
        "critical": 0,
        "silenced": 0,
        "missing": 0,
    }
    # the drift node: 2 GPUs × 12 five-minute buckets drifted
    assert body["utilization"]["idle_tensor_gpu_hours"]["cluster"] == pytest.approx(2.0)
    cluster_series = body["utilization"]["series"]["cluster"]
    assert max(v for v in cluster_series["util"] if v is not None) == pytest.approx(
        (3 * UTIL + DRIFT_UTIL) / 4
    )
    assert set(body["pools"]["counts"]) == {"inference", "training"}
    assert body["ingest"][0]["family"] == "gpu" and body["ingest"][0]["ok"] is True


def test_node_endpoint_accepts_html_names_and_centres_on_at(
    logged_in_client: Client, cluster: Cluster
) -> None:
    at = cluster.end - timedelta(minutes=30)
    url = f"/api/v1/nodes/{quote(cluster.drift_node, safe='')}?at={iso(at)}"
    body = logged_in_client.get(url).json()
    assert body["node"]["name"] == cluster.drift_node
    assert body["start"] == iso(at - timedelta(minutes=30)) and body["end"] == iso(
        at + timedelta(minutes=30)
    )
    assert set(body["gpus"]) == {"0", "1"} and set(body["ports"]) == {"mlx5_0", "mlx5_1"}
    assert body["gpus"]["0"]["util"][0] == DRIFT_UTIL
    hostile = logged_in_client.get(f"/api/v1/nodes/{quote(cluster.nodes[0], safe='')}")
    assert hostile.status_code == 200 and hostile.json()["node"]["name"] == cluster.nodes[0]
    assert logged_in_client.get("/api/v1/nodes/nope").status_code == 404
    assert (
        logged_in_client.get(f"/api/v1/nodes/{cluster.drift_node}?at=soon").json()["parameter"]
        == "at"
    )


def test_overview_queues_show_integer_counts_and_the_hours_highest_wait(
    logged_in_client: Client,
) -> None:
    make_queues(datetime.now(UTC) - timedelta(minutes=3))
    queues = logged_in_client.get("/api/v1/overview").json()["queues"]
    rows = [(q["queue"], q["pending_active"], q["pending_inadmissible"], q["admitted_active"],
             q["wait_p95"]) for q in queues]  # fmt: skip
    # 70 minutes back (500 s) is outside the hour; cq-idle admitted 2 h ago only
    assert rows == [("cq-idle", 0, 2, 0, None), ("cq-wait", 1, 0, 4, 75.0)]
    assert all(type(q["pending_active"]) is int for q in queues)


def test_overview_pools_have_gaps_where_their_nodes_reported_nothing(
    logged_in_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    end = align(datetime.now(UTC), 900) - timedelta(minutes=15)
    # The overview's window ends at the quarter hour after "now": pinned, end + 30 min.
    monkeypatch.setattr("core.clock.now", lambda: end + timedelta(minutes=20))
    cluster = make_cluster(count=4, hours=1, end=end, hostile_names=False)
    write_samples(cluster, end - timedelta(hours=3), end - timedelta(hours=2))
    pools = logged_in_client.get("/api/v1/overview").json()["pools"]
    first = pools["times"].index(iso(end - timedelta(hours=3)))
    after = [None] * (len(pools["times"]) - first - 12)
    assert len(pools["times"]) == 97 and pools["times"][-1] == iso(end + timedelta(minutes=30))
    # gpu-001 is the inference pool, the other three training: 1 h, a 1 h gap, 1 h
    assert pools["counts"]["inference"] == [None] * first + [1] * 4 + [None] * 4 + [1] * 4 + after
    assert pools["counts"]["training"] == [None] * first + [3] * 4 + [None] * 4 + [3] * 4 + after


def test_node_page_data_from_the_node_tiles_equals_the_rollups_exactly(
    logged_in_client: Client,
    cluster: Cluster,
    settings,  # noqa: ANN001
) -> None:
    # 6 h from a start off the 5-minute grid (as the page's default window): tiled 5-minute
    # columns, and the last bucket from the rollups (the cursors at the end of the data).
    for family in ("gpu", "ib"):
        IngestCursor.objects.create(family=family, covered_until=cluster.end)
    start = cluster.end - timedelta(hours=6, minutes=2)
    url = f"/api/v1/nodes/{cluster.drift_node}?start={iso(start)}&end={iso(start + timedelta(hours=6))}"
    tiled = logged_in_client.get(url).json()
    settings.DASHBOARD_NODE_TILES = False
    cache.clear()  # the columns are cached per cursor
    assert logged_in_client.get(url).json() == tiled
    gpu, port = tiled["gpus"]["1"], tiled["ports"]["mlx5_0"]
    assert len(gpu["times"]) == 72 and gpu["times"][0] == iso(start)
    # The hour of data: 12 buckets, each in its own column (2 minutes after its start).
    assert [gpu["times"][j] for j, v in enumerate(gpu["util"]) if v is not None] == [
        iso(cluster.end - timedelta(minutes=62 - 5 * k)) for k in range(12)
    ]
    assert [v for v in gpu["util"] if v is not None] == [DRIFT_UTIL] * 12
    assert [v for v in gpu["tensor"] if v is not None] == [DRIFT_TENSOR * 100] * 12
    assert [v for v in port["throughput"] if v is not None] == [TX_PER_PORT * 1.5] * 12
    settings.DASHBOARD_NODE_TILES = True
    erring = logged_in_client.get(url.replace(cluster.drift_node, cluster.error_node)).json()
    # one symbol error per 30 s step on the error node's second port: 10 per 5-minute bucket
    assert [v for v in erring["ports"]["mlx5_1"]["errors"] if v is not None] == [10.0] * 12


def test_openapi_documents_every_endpoint(logged_in_client: Client) -> None:
    doc = logged_in_client.get("/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    for path in ("/api/v1/heatmap", "/api/v1/rails", "/api/v1/overview", "/api/v1/nodes/{name}"):
        assert "get" in doc["paths"][path]
    metric = next(
        p for p in doc["paths"]["/api/v1/heatmap"]["get"]["parameters"] if p["name"] == "metric"
    )
    assert "drift" in metric["schema"]["enum"]
    assert doc["components"]["schemas"]["Heatmap"]["required"][-1] == "values"


def test_openapi_registry_takes_other_modules_paths(logged_in_client: Client) -> None:
    from dashboard.api.registry import register_path

    register_path("/api/v1/example", "get", {"summary": "added by another app"})
    assert "/api/v1/example" in logged_in_client.get("/api/v1/openapi.json").json()["paths"]


def test_heatmap_is_cached_per_ingest_cursor(
    logged_in_client: Client, cluster: Cluster, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    from ingest.models import IngestCursor, Node

    cursor = IngestCursor.objects.create(family="gpu", covered_until=cluster.end)
    params = {
        "metric": "gpu_util",
        "start": iso(cluster.start),
        "end": iso(cluster.end),
        "step": 300,
    }
    first = heatmap(logged_in_client, **params).json()
    Node.objects.filter(name=cluster.drift_node).update(name="renamed")
    with django_assert_max_num_queries(4):  # session, user, cursor, alerts: no aggregate
        assert heatmap(logged_in_client, **params).json() == first
    cursor.covered_until += timedelta(seconds=30)
    cursor.save()
    assert "renamed" in heatmap(logged_in_client, **params).json()["nodes"]


def test_cache_warm_hook_builds_the_committed_families_24h_heatmaps(
    logged_in_client: Client, cluster: Cluster, fixed_epoch: datetime, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    from dashboard.api.builders import warm
    from ingest.events import ingest_committed
    from ingest.models import IngestCursor

    IngestCursor.objects.create(family="gpu", covered_until=cluster.end)
    assert warm(ingest_committed(["gpu"], iso(cluster.end), 64)) == 5  # the five GPU metrics
    with django_assert_max_num_queries(4):  # session, user, cursor, alerts: served from the cache
        body = logged_in_client.get("/api/v1/heatmap?metric=drift&window=24h&width=1200").json()
    assert cluster.drift_node in body["nodes"]
    assert warm({"type": "alerts.changed"}) == 0


def test_overview_is_cached_until_an_ingest_commit_or_an_alert_change(
    logged_in_client: Client,
    cluster: Cluster,
    fixed_epoch: datetime,
    settings,
    django_assert_max_num_queries,
) -> None:  # noqa: ANN001
    from alerts.models import Alert, AlertState
    from core import clock
    from ingest.models import IngestCursor, Node

    settings.DASHBOARD_OVERVIEW_REFRESH_SECONDS = 3600
    cursor = IngestCursor.objects.create(family="gpu", covered_until=cluster.end)
    assert logged_in_client.get("/api/v1/overview").json()["nodes"]["total"] == 4
    Node.objects.filter(name=cluster.drift_node).delete()
    # session, user, cursors, the alert / silence / evaluation marker: nothing rebuilt
    with django_assert_max_num_queries(6):
        assert logged_in_client.get("/api/v1/overview").json()["nodes"]["total"] == 4

    cursor.covered_until += timedelta(seconds=30)
    cursor.save()
    assert logged_in_client.get("/api/v1/overview").json()["nodes"]["total"] == 3

    now = clock.now()
    Alert.objects.create(
        fingerprint="f" * 64, rule="gpu_xid", state=AlertState.FIRING, severity="critical",
        labels={"node": cluster.nodes[0]}, node=cluster.nodes[0], pending_since=now,
        firing_at=now, last_match_at=now, summary="XID 79",
    )  # fmt: skip
    firing = logged_in_client.get("/api/v1/overview").json()["alerts"]["firing"]
    assert [(a["name"], a["node"]) for a in firing] == [("gpu_xid", cluster.nodes[0])]
