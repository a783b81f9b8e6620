"""Checkpoints from recorded gauges: one per distinct timestamp, keyed by step, jobs created."""

from __future__ import annotations

import pytest
from django.db import transaction

from ingest.sources.checkpoints import CheckpointSource
from ingest.stepseries import to_datetime
from runs.models import Checkpoint, Job
from tests.ingest.recorded_client import RecordedClient, window


def test_pull_reads_each_distinct_timestamp_once() -> None:
    batch = CheckpointSource().pull(RecordedClient("checkpoints_window.json"), window())
    found, _seen = batch.payload
    assert [(c.job[1], c.ts, c.step, c.duration) for c in found] == [
        ("llama-1", 1699999900.0, 100, 30.0),
        ("llama-1", 1700000055.0, 200, 42.5),
        ("<i>j</i>", 1700000070.5, 5, None),
    ]
    assert batch.skipped == 3  # the never-checkpointed job (0), the unlabelled series, NaN


@pytest.mark.django_db
def test_store_creates_jobs_and_never_duplicates() -> None:
    source = CheckpointSource()
    with transaction.atomic():
        first = source.store(source.pull(RecordedClient("checkpoints_window.json"), window())).rows
    with transaction.atomic():
        again = source.store(source.pull(RecordedClient("checkpoints_window.json"), window())).rows
    assert (first, again) == (3, 0)
    assert Job.objects.filter(namespace="research", name="<i>j</i>").exists()
    latest = Checkpoint.objects.filter(job__name="llama-1").last()
    assert (latest.step, latest.ts, latest.duration_seconds, latest.source) == (
        200, to_datetime(1700000055), 42.5, "prometheus",
    )  # fmt: skip
