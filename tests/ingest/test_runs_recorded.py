"""Runs from recorded answers: jobs, pods, node intervals, phases, restarts, events, HTML names."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import override_settings

from ingest.models import ClusterQueue
from ingest.runs_normalize import job_state
from ingest.sources.runs import RunsSource
from ingest.stepseries import to_datetime
from runs.models import Job, Pod, PodAssignment, RunEvent
from tests.ingest.recorded_client import T0, RecordedClient, window


def test_job_state_prefers_running_then_pending_then_failed() -> None:
    assert job_state(["Succeeded", "Running"]) == "running"
    assert job_state(["Succeeded", "Pending"]) == "pending"
    assert job_state(["Succeeded", "Failed"]) == "failed"
    assert job_state(["Succeeded"]) == "succeeded"
    assert job_state([]) == "unknown"


def test_pull_normalises_pods_moves_and_events() -> None:
    batch = RunsSource().pull(RecordedClient("runs_window.json"), window())
    data = batch.payload
    assert sorted((pod[1], node, a - T0, b - T0) for pod, node, a, b in data.assignments) == [
        ("llama-1-worker-0", "gpu-001", 0, 90),
        ("llama-1-worker-1", "gpu-002", 0, 30),
        ("llama-1-worker-1", "gpu-003", 60, 90),
        ("p-0", "gpu-004", 60, 90),
    ]
    assert sorted((job[1], ts - T0, kind, pod) for job, ts, kind, pod in data.events) == [
        ("<b>x</b>", 60, "started", ""),
        ("<b>x</b>", 90, "succeeded", ""),
        ("llama-1", 60, "restart", "llama-1-worker-0"),
    ]
    assert data.started_hints == {("train", "llama-1"): T0}
    assert data.jobs[("train", "llama-1")].local_queue == "pretrain"
    assert batch.skipped == 2  # the pod without created_by_name, the +Inf restart count


@pytest.mark.django_db
@override_settings(INGEST_LOCAL_QUEUE_MAP={"train/pretrain": "cq-pretrain"})
def test_store_is_idempotent_and_links_the_cluster_queue() -> None:
    ClusterQueue.objects.create(name="cq-pretrain")
    source = RunsSource()
    with transaction.atomic():
        first = source.store(source.pull(RecordedClient("runs_window.json"), window())).rows
    with transaction.atomic():
        again = source.store(source.pull(RecordedClient("runs_window.json"), window())).rows
    assert (first, again) == (8, 0)
    llama = Job.objects.get(namespace="train", name="llama-1")
    assert (llama.state, llama.local_queue, llama.cluster_queue.name) == (
        "running",
        "pretrain",
        "cq-pretrain",
    )
    assert Job.objects.get(name="<b>x</b>").state == "succeeded"
    restart = RunEvent.objects.get(kind="restart")
    assert (restart.ts, restart.pod, restart.detail) == (
        to_datetime(T0 + 60), "llama-1-worker-0", "restart count 1; last terminated: Error",
    )  # fmt: skip
    assert Pod.objects.get(name="llama-1-worker-0").restarts == 1
    assert PodAssignment.objects.filter(pod__name="llama-1-worker-1").count() == 2
    assert RunEvent.objects.filter(job=llama, kind="started").get().ts == to_datetime(T0)
