"""Runs and checkpoints against a real Prometheus holding simulator history (run_crash scenario)."""

from __future__ import annotations

import math

import pytest
from django.db import transaction

from ingest.prometheus import PrometheusClient
from ingest.sources.base import Source, Window
from ingest.sources.checkpoints import CheckpointSource
from ingest.sources.runs import RunsSource
from ingest.stepseries import to_datetime
from runs.models import Checkpoint, Job, PodAssignment, RunEvent
from simulator import FaultKind
from tests.support.prometheus import SimulatedPrometheus

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db]


def ingest(source: Source, prom: SimulatedPrometheus, start: float, end: float) -> int:
    """Pull and store (start, end] through the real client, in one transaction."""
    batch = source.pull(
        PrometheusClient(prom.prometheus.url), Window(to_datetime(start), to_datetime(end), 30)
    )
    with transaction.atomic():
        return source.store(batch).rows


def crashed_run(prom: SimulatedPrometheus):  # noqa: ANN201 - a simulator Run
    fault = next(f for f in prom.cluster.spec.faults if f.kind == FaultKind.RUN_CRASH)
    for schedule in prom.cluster.schedules:
        for run in (schedule.run_at(prom.start + k * 600) for k in range(13)):
            if run is not None and run.name == fault.run:
                return run
    raise LookupError(fault.run)


def test_crash_is_a_restart_event_at_the_crash_step_on_every_pod(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom = scenario_prometheus
    run = crashed_run(prom)
    assert ingest(RunsSource(), prom, prom.start, prom.end - 30) > 0
    job = Job.objects.get(name=run.name, namespace=run.queue.namespace)
    restarts = RunEvent.objects.filter(job=job, kind=RunEvent.Kind.RESTART)
    assert {e.ts for e in restarts} == {to_datetime(run.crashes[0])}
    assert restarts.count() == len(run.nodes)
    assert job.local_queue == run.queue.local_queue
    held = set(PodAssignment.objects.filter(pod__job=job).values_list("node__name", flat=True))
    assert held == set(run.nodes)
    assignment = PodAssignment.objects.filter(pod__job=job).first()
    # A pod is first seen at the first scrape step at or after its admission.
    first_step = math.ceil(max(run.admitted_at, prom.start) / prom.step) * prom.step
    assert assignment.first_seen == to_datetime(first_step)


def test_reingesting_runs_in_other_cuts_adds_nothing(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    prom = scenario_prometheus
    middle = prom.start + 1800 * 2
    ingest(RunsSource(), prom, prom.start, middle)
    ingest(RunsSource(), prom, middle, prom.end - 30)
    counts = (PodAssignment.objects.count(), RunEvent.objects.count())
    assert ingest(RunsSource(), prom, prom.start, prom.end - 30) == 0
    assert (PodAssignment.objects.count(), RunEvent.objects.count()) == counts


def test_checkpoints_match_the_simulated_run_once(scenario_prometheus: SimulatedPrometheus) -> None:
    prom = scenario_prometheus
    run = crashed_run(prom)
    steps = [prom.start + 30 * k for k in range(int((prom.end - prom.start) // 30))]
    expected = {
        (cp.step, to_datetime(int(cp.timestamp)))  # the exporter prints whole seconds
        for t in steps
        if run.admitted_at <= t < run.end and (cp := run.last_checkpoint(t)) is not None
    }
    ingest(CheckpointSource(), prom, prom.start, prom.start + 3600)
    ingest(CheckpointSource(), prom, prom.start + 3600, prom.end - 30)
    stored = set(Checkpoint.objects.filter(job__name=run.name).values_list("step", "ts"))
    assert stored == expected and expected
    assert ingest(CheckpointSource(), prom, prom.start, prom.end - 30) == 0


@pytest.mark.django_db(transaction=True)
def test_every_cluster_family_runs_through_the_service_exactly_once(
    scenario_prometheus: SimulatedPrometheus,
) -> None:
    from ingest.services import ingest_family

    prom = scenario_prometheus
    client = PrometheusClient(prom.prometheus.url)
    since, until = to_datetime(prom.start), to_datetime(prom.end - 30)
    for family in ("kueue", "cluster", "runs", "checkpoints"):
        first = ingest_family(family, since=since, until=until, client=client, publish=False)
        assert (first.status, first.error) == ("ok", "") and first.rows > 0
        again = ingest_family(family, since=since, until=until, client=client, publish=False)
        assert (again.status, again.rows) == ("ok", 0)
