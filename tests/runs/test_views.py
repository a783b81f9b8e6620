"""Runs and queues pages and JSON endpoints on a constructed run: exact figures, shapes, query counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from runs.advisor import daly_interval, young_interval

from .factories import Scenario, build_queues, build_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def scenario() -> Scenario:
    return build_run()


def test_run_api_finds_the_crash_and_exact_lost_work(
    logged_in_client: Client, scenario: Scenario
) -> None:
    body = logged_in_client.get("/api/v1/runs/team-a/llama-70b").json()
    (crash,) = body["crashes"]
    assert crash["time"] == scenario.crash.isoformat().replace("+00:00", "Z")
    assert crash["lost_work_since_step"] == 600
    assert (
        crash["lost_work_seconds"]
        == (scenario.crash - scenario.last_checkpoint_before_crash).total_seconds()
        == 600
    )
    # Busy again at the first step with median GPU util >= 50%: 4 minutes after the crash.
    assert crash["restart_seconds"] == 240
    wall = (scenario.end - scenario.start).total_seconds()
    assert body["wall_seconds"] == wall == 7200
    assert body["lost"] == {
        "redo_seconds": 600,
        "restart_seconds": 240,
        "checkpoint_seconds": 4 * 30,
    }
    assert body["lost_seconds"] == 960
    assert body["ettr"] == pytest.approx((7200 - 600 - 240 - 120) / 7200, abs=1e-12)
    assert body["gpus"] == 4 and body["nodes"] == ["gpu-00", "gpu-01"] and body["restarts"] == 1
    assert [c["step"] for c in body["checkpoints"]] == [200, 400, 600, 800]


def test_run_api_advisor_figures(logged_in_client: Client, scenario: Scenario) -> None:
    advisor = logged_in_client.get("/api/v1/runs/team-a/llama-70b").json()["advisor"]
    # The only run of similar size: 7,200 s of run time and one crash.
    assert advisor["mtbf_seconds"] == 7200 and advisor["similar_runs"] == 1
    assert advisor["checkpoint_seconds"] == 30 and advisor["current_interval_seconds"] == 1200
    assert advisor["young_interval_seconds"] == pytest.approx(young_interval(30, 7200))
    assert advisor["daly_interval_seconds"] == pytest.approx(daly_interval(30, 7200))
    assert advisor["summary"].startswith(
        "checkpointing every 20 min; 11 min would cut expected waste"
    )


def test_unknown_run_api_is_404(logged_in_client: Client) -> None:
    assert logged_in_client.get("/api/v1/runs/team-a/nope").status_code == 404
    assert logged_in_client.get("/runs/team-a/nope/").status_code == 404


def test_runs_list_api_and_filters(logged_in_client: Client, scenario: Scenario) -> None:
    body = logged_in_client.get("/api/v1/runs").json()
    assert body["count"] == 1
    run = body["runs"][0]
    assert (run["namespace"], run["name"], run["cluster_queue"], run["state"]) == (
        "team-a",
        "llama-70b",
        "cq-a",
        "running",
    )
    assert run["url"] == "/runs/team-a/llama-70b/"
    for query, count in (("queue=lq-a", 1), ("queue=cq-a", 1), ("queue=other", 0), ("state=failed", 0),
                         ("node=gpu-01", 1), ("node=gpu-99", 0), ("window=6h", 1)):  # fmt: skip
        assert logged_in_client.get(f"/api/v1/runs?{query}").json()["count"] == count, query
    bad = logged_in_client.get("/api/v1/runs?window=2y")
    assert bad.status_code == 400 and bad.json()["parameter"] == "window"


def test_api_needs_credentials(client: Client, scenario: Scenario) -> None:
    assert client.get("/api/v1/runs").status_code == 401


def test_list_queries_do_not_grow_with_runs(
    logged_in_client: Client, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    build_run("run-0", with_samples=False)
    with django_assert_max_num_queries(12) as one:
        logged_in_client.get("/runs/")
    for i in range(1, 5):
        build_run(f"run-{i}", node_prefix=f"n{i}", with_samples=False)
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert logged_in_client.get("/runs/").status_code == 200
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert logged_in_client.get("/api/v1/runs").json()["count"] == 5


def test_run_page_renders_with_bounded_queries(logged_in_client: Client, scenario: Scenario,
                                               django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    with django_assert_max_num_queries(25):
        response = logged_in_client.get("/runs/team-a/llama-70b/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-figure="fig-timeline"' in html and "vendor/plotly/plotly" in html
    assert "checkpointing every 20 min" in html


def test_untrusted_labels_are_escaped(logged_in_client: Client) -> None:
    build_run("evil", detail='<img src=x onerror="alert(1)">')
    html = logged_in_client.get("/runs/team-a/evil/").content.decode()
    assert "<img src=x" not in html
    # In the figure's hover text the detail is HTML-escaped for Plotly (and JSON-escaped for the page).
    assert "\\u0026lt;img src=x" in html


def test_queues_api_and_page(
    logged_in_client: Client, scenario: Scenario, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    build_queues(timezone.now())
    body = logged_in_client.get("/api/v1/queues").json()
    queues = {q["name"]: q for q in body["queues"]}
    assert queues["cq-a"]["stalled"] is True and queues["cq-b"]["stalled"] is False
    assert queues["cq-a"]["latest"]["pending_active"] == 3
    assert queues["cq-b"]["evictions"] == [
        {"kind": "preempted", "reason": "InClusterQueue", "count": 2.0}
    ]
    assert queues["cq-b"]["quota"][0]["usage"] == 32
    assert [r["name"] for r in body["runs"]] == ["llama-70b"] and body["runs"][0]["queue"] == "cq-a"
    days = body["goodput"]
    assert sum(d["wall_gpu_seconds"] for d in days) == 7200 * 4
    assert sum(d["productive_gpu_seconds"] for d in days) == (7200 - 960) * 4
    with django_assert_max_num_queries(25):
        html = logged_in_client.get("/queues/").content.decode()
    assert "stalled" in html and 'data-figure="fig-gantt"' in html


def test_openapi_lists_the_endpoints(logged_in_client: Client) -> None:
    paths = logged_in_client.get("/api/v1/openapi.json").json()["paths"]
    for path in ("/api/v1/runs", "/api/v1/runs/{namespace}/{name}", "/api/v1/runs/{namespace}/{name}/checkpoints",
                 "/api/v1/queues"):  # fmt: skip
        assert path in paths


def test_runs_page_lists_and_filters(logged_in_client: Client, scenario: Scenario) -> None:
    html = logged_in_client.get("/runs/?queue=cq-a").content.decode()
    assert "/runs/team-a/llama-70b/" in html
    assert (
        "/runs/team-a/llama-70b/"
        not in logged_in_client.get("/runs/?state=failed").content.decode()
    )
    assert timezone.now() - scenario.start < timedelta(hours=4)


def test_run_page_shows_the_pod_status_reason_of_a_lost_node(
    logged_in_client: Client, scenario: Scenario
) -> None:
    from runs.models import RunEvent

    RunEvent.objects.create(job=scenario.job, ts=scenario.crash + timedelta(minutes=30),
                            kind=RunEvent.Kind.NODE_LOST, pod="llama-70b-worker-1", detail="NodeLost")  # fmt: skip
    html = logged_in_client.get("/runs/team-a/llama-70b/").content.decode()
    crashes = html[html.index('id="crashes"') :]
    assert "node_lost</td><td>NodeLost</td>" in crashes


def test_the_timeline_draws_the_alerts_of_the_runs_nodes_but_never_an_inactive_blip(
    logged_in_client: Client, scenario: Scenario
) -> None:
    from alerts.models import Alert, AlertState
    from dashboard.runs.report import run_report

    def alert(rule: str, node: str, state: str, minutes: int, resolved: int | None) -> None:
        since = scenario.start + timedelta(minutes=minutes)
        Alert.objects.create(
            fingerprint=f"{rule}-{node}", rule=rule, state=state, severity="critical", labels={"node": node},
            node=node, pending_since=since, last_match_at=since, summary=f"{rule} on {node}",
            firing_at=since if state != AlertState.INACTIVE else None,
            resolved_at=None if resolved is None else scenario.start + timedelta(minutes=resolved),
        )  # fmt: skip

    alert("gpu_xid", "gpu-00", AlertState.RESOLVED, 70, 75)
    alert("nvlink_errors", "gpu-01", AlertState.FIRING, 100, None)
    alert(
        "gpu_tensor_drift", "gpu-01", AlertState.INACTIVE, 30, None
    )  # a pending blip, never fired
    alert("ib_port_errors", "gpu-99", AlertState.FIRING, 30, None)  # not one of the run's nodes
    report = run_report("team-a", "llama-70b", with_series=True)
    assert report is not None
    assert [(a.rule, a.node, a.state) for a in report.alerts] == [
        ("gpu_xid", "gpu-00", "resolved"),
        ("nvlink_errors", "gpu-01", "firing"),
    ]
    html = logged_in_client.get("/runs/team-a/llama-70b/").content.decode()
    assert "gpu_xid on gpu-00" in html and "gpu_tensor_drift" not in html
