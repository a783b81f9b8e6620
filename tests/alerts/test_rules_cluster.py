"""node_metrics_missing, ingest_stale, kueue_queue_stalled and checkpoint_stale as pure functions."""

from __future__ import annotations

from alerts.rules.data import FamilyCursor, KueuePoint, RunCheckpoints
from tests.alerts.builders import STEP, T0, data, findings, gpu_series

NOW = T0 + 3600


def test_node_that_stops_reporting_while_others_report_is_missing() -> None:
    gpu = gpu_series("gpu-001", 0, NOW - 900, NOW) + gpu_series("gpu-002", 0, NOW - 900, NOW - 300)
    (found,) = findings("node_metrics_missing", data(NOW, gpu=gpu), params={"families": ["gpu"]})
    assert (found.labels, found.state, found.since) == (
        {"node": "gpu-002"},
        "firing",
        NOW - 300 + 180,
    )
    assert found.detail.context["families"] == ["gpu"]


def test_node_missing_before_the_window_is_still_known() -> None:
    gpu = gpu_series("gpu-001", 0, NOW - 600, NOW)
    evaluation = data(NOW, gpu=gpu, last_seen={("gpu", "gpu-009"): NOW - 7200})
    (found,) = findings("node_metrics_missing", evaluation, params={"families": ["gpu"]})
    assert (found.labels["node"], found.since) == ("gpu-009", NOW - 7200 + 180)


def test_nodes_are_not_missing_when_nobody_reports() -> None:
    gpu = gpu_series("gpu-001", 0, NOW - 900, NOW - 600) + gpu_series(
        "gpu-002", 0, NOW - 900, NOW - 600
    )
    assert findings("node_metrics_missing", data(NOW, gpu=gpu), params={"families": ["gpu"]}) == []


def test_node_that_came_back_resolves() -> None:
    gpu = gpu_series("gpu-001", 0, NOW - 900, NOW)
    gpu += [
        pt for pt in gpu_series("gpu-002", 0, NOW - 900, NOW) if not NOW - 600 < pt.ts < NOW - 120
    ]
    (found,) = findings("node_metrics_missing", data(NOW, gpu=gpu), params={"families": ["gpu"]})
    assert (found.state, found.since, found.until) == ("inactive", NOW - 600 + 180, NOW - 120)


def test_ingest_stale_is_judged_on_the_wall_clock() -> None:
    cursors = [FamilyCursor("gpu", NOW - 400, NOW - 400), FamilyCursor("ib", NOW - 60, NOW - 60)]
    (found,) = findings("ingest_stale", data(NOW, cursors=cursors))
    assert (found.labels, found.state, found.since) == ({"family": "gpu"}, "firing", NOW - 100)
    assert found.detail.value == 400


def test_queue_with_pending_workloads_and_no_admission_for_fifteen_minutes_stalls() -> None:
    stalled = [KueuePoint("cq-a", NOW - 1200 + STEP * i, 3.0, 0.0, 0.0) for i in range(41)]
    admitting = [
        KueuePoint("cq-b", NOW - 1200 + STEP * i, 3.0, 0.0, 1.0 if i % 10 == 0 else 0.0)
        for i in range(41)
    ]
    quota = [KueuePoint("cq-c", NOW - 1200 + STEP * i, 0.0, 5.0, 0.0) for i in range(41)]
    found = findings("kueue_queue_stalled", data(NOW, kueue=stalled + admitting + quota))
    assert [(f.labels, f.state, f.since, f.fired_at) for f in found if f.state != "inactive"] == [
        ({"cluster_queue": "cq-a"}, "firing", NOW - 1200, NOW - 300)
    ]
    assert [f.labels["cluster_queue"] for f in found if f.state == "inactive"] == ["cq-b"]
    assert found[0].detail.value == 3.0


def test_run_that_has_not_checkpointed_for_three_usual_intervals_is_stale() -> None:
    marks = tuple(NOW - 2700 - 600 * i for i in range(5, -1, -1))  # every 10 min, last 45 min ago
    recent = tuple(NOW - 1500 - 600 * i for i in range(5, -1, -1))  # last 25 min ago
    runs = [
        RunCheckpoints("train", "stale", True, marks),
        RunCheckpoints("train", "fine", True, recent),
        RunCheckpoints("train", "finished", False, marks),
        RunCheckpoints("train", "young", True, marks[-2:]),
    ]
    (found,) = findings("checkpoint_stale", data(NOW, runs=runs))
    assert (found.labels, found.state, found.since) == (
        {"namespace": "train", "run": "stale"},
        "firing",
        NOW - 900,
    )
    assert found.detail.context["median_interval_seconds"] == 600.0
    assert found.detail.value == 2700.0
