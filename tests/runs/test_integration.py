"""run_crash and checkpoint_stall in a real Prometheus fed by the simulator, through the real ingest."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from simulator import FaultKind

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]
FAMILIES = ["cluster", "kueue", "runs", "checkpoints", "gpu"]


def _fault_run(prom: object, kind: FaultKind) -> object:
    cluster = prom.cluster  # type: ignore[attr-defined]
    fault = next(f for f in cluster.spec.faults if f.kind == kind)
    t = prom.end - 60  # type: ignore[attr-defined]
    for moment in (t, fault.start.timestamp() if hasattr(fault.start, "timestamp") else t):
        for run in cluster.runs_at(moment):
            if run.name == fault.run:
                return run
    raise LookupError(fault.run)


@pytest.fixture
def ingested(scenario_prometheus: object) -> object:
    prom = scenario_prometheus
    since = datetime.fromtimestamp(prom.start, UTC)  # type: ignore[attr-defined]
    until = datetime.fromtimestamp(prom.end, UTC)  # type: ignore[attr-defined]
    outcomes = ingest_all(since=since, until=until, client=PrometheusClient(prom.prometheus.url),  # type: ignore[attr-defined]
                          families=FAMILIES)  # fmt: skip
    assert all(o.status != "error" for o in outcomes), [o.error for o in outcomes]
    return prom


def test_run_crash_lost_work_and_ettr(ingested: object, logged_in_client: Client) -> None:
    run = _fault_run(ingested, FaultKind.RUN_CRASH)
    step = ingested.step  # type: ignore[attr-defined]
    crash = run.crashes[0]  # type: ignore[attr-defined]
    checkpoint = run.last_checkpoint(crash)  # type: ignore[attr-defined]
    body = logged_in_client.get(f"/api/v1/runs/{run.queue.namespace}/{run.name}").json()  # type: ignore[attr-defined]
    (found,) = [c for c in body["crashes"] if c["kind"] == "restart"]
    crash_at = datetime.fromisoformat(found["time"]).timestamp()
    assert crash <= crash_at < crash + step  # the first ingest step at or after the crash
    assert found["lost_work_since_step"] == checkpoint.step
    stored = next(c for c in body["checkpoints"] if c["step"] == checkpoint.step)
    stored_at = datetime.fromisoformat(stored["time"]).timestamp()
    assert abs(stored_at - checkpoint.timestamp) < 1  # the gauge carries whole seconds
    assert found["lost_work_seconds"] == crash_at - stored_at
    assert abs(found["lost_work_seconds"] - (crash - checkpoint.timestamp)) < step
    # Hand computation: wall − (redo + restart + checkpoint writes), restart exact to the step.
    wall = body["wall_seconds"]
    start, end = (datetime.fromisoformat(body[k]).timestamp() for k in ("start", "end"))
    writes = sum(min(c["duration_seconds"] or 0, t - start) for c in body["checkpoints"]
                 if start < (t := datetime.fromisoformat(c["time"]).timestamp()) <= end)  # fmt: skip
    assert abs(found["restart_seconds"] - 240.0) <= step
    expected = (wall - found["lost_work_seconds"] - found["restart_seconds"] - writes) / wall
    assert body["ettr"] == pytest.approx(expected, abs=1e-9)


def test_checkpoint_stall_leaves_a_gap(ingested: object, logged_in_client: Client) -> None:
    run = _fault_run(ingested, FaultKind.CHECKPOINT_STALL)
    body = logged_in_client.get(f"/api/v1/runs/{run.queue.namespace}/{run.name}").json()  # type: ignore[attr-defined]
    times = [datetime.fromisoformat(c["time"]).timestamp() for c in body["checkpoints"]]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert gaps and max(gaps) > 2 * run.period  # type: ignore[attr-defined]
