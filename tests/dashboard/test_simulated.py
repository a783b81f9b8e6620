"""The dashboard over simulator data ingested from a real Prometheus through the real ingest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlencode

import pytest
from django.test import Client

from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import FaultKind

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def ingested(scenario_prometheus: object) -> object:
    prom = scenario_prometheus
    since = datetime.fromtimestamp(prom.start, UTC)  # type: ignore[attr-defined]
    until = datetime.fromtimestamp(prom.end, UTC)  # type: ignore[attr-defined]
    outcomes = ingest_all(since=since, until=until, client=PrometheusClient(prom.prometheus.url),  # type: ignore[attr-defined]
                          families=["cluster", "topology", "gpu", "ib"])  # fmt: skip
    assert all(o.status != "error" for o in outcomes), [o.error for o in outcomes]
    return prom


def test_heatmap_over_ingested_data_has_one_row_per_node_and_full_rows(
    ingested: object, logged_in_client: Client, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    end = datetime.fromtimestamp(ingested.end, UTC)  # type: ignore[attr-defined]
    start = end - timedelta(hours=1)
    # user, cursor, SET float digits, cells, RESET, node names, alerts: none per node or column
    with django_assert_max_num_queries(7):
        body = logged_in_client.get("/api/v1/heatmap?" + urlencode(
            {"metric": "ib_tx", "start": iso(start), "end": iso(end), "step": 60})).json()  # fmt: skip
    names = {n.name for n in ingested.cluster.nodes}  # type: ignore[attr-defined]
    assert (
        set(body["nodes"]) <= names and len(body["nodes"]) >= len(names) - 2
    )  # node_down ones may lack data
    assert len(body["times"]) == 60 and all(len(row) == 60 for row in body["values"])
    assert body["unit"] == "B/s"


def test_tensor_drift_shows_on_the_node_page_at_the_fault_time(
    ingested: object, logged_in_client: Client
) -> None:
    fault = next(f for f in ingested.cluster.spec.faults if f.kind == FaultKind.TENSOR_DRIFT)  # type: ignore[attr-defined]
    node, gpu = fault.nodes[0], str(fault.gpus[0])
    middle = fault.start + (fault.end - fault.start) / 2
    body = logged_in_client.get(
        f"/api/v1/nodes/{quote(node, safe='')}?at={iso(middle)}&window=1h"
    ).json()
    times = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in body["gpus"][gpu]["times"]]
    inside = [
        j
        for j, t in enumerate(times)
        if fault.start + timedelta(minutes=2) <= t <= fault.end - timedelta(minutes=2)
    ]
    tensor = [
        body["gpus"][gpu]["tensor"][j] for j in inside if body["gpus"][gpu]["tensor"][j] is not None
    ]
    util = [
        body["gpus"][gpu]["util"][j] for j in inside if body["gpus"][gpu]["util"][j] is not None
    ]
    assert tensor and max(tensor) < 10 and min(util) > 50  # util says busy, tensor cores idle
    window = {"metric": "drift", "start": iso(fault.start - timedelta(minutes=20)),
              "end": iso(fault.end - timedelta(minutes=2)), "step": 60}  # fmt: skip
    heat = logged_in_client.get("/api/v1/heatmap?" + urlencode(window)).json()
    row = heat["values"][heat["nodes"].index(node)]
    when = [datetime.fromisoformat(t.replace("Z", "+00:00")) for t in heat["times"]]
    before = [v for v, t in zip(row, when, strict=True) if v is not None and t < fault.start]
    during = [
        v
        for v, t in zip(row, when, strict=True)
        if v is not None and t >= fault.start + timedelta(minutes=2)
    ]
    # one GPU of eight drifting lifts the node's mean drift above its own baseline
    assert sum(during) / len(during) > sum(before) / len(before) + 0.03
