"""Migrations ingest.0016 and runs.0001 move the run tables to the runs app without losing a row.

A database migrated to just before the move (ingest 0015, no runs app) is filled with a run
through the historical models, then migrated forward: the rows must be in ``runs_*`` with the
same ids and values, and the ORM, the identity sequences and the foreign keys must keep working.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from runs.models import Checkpoint, Job

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("ingest", "0015_node_tiles"), ("runs", None)]
T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
T1 = datetime(2026, 5, 4, 12, 30, tzinfo=UTC)
CRASH = datetime(2026, 5, 4, 11, 15, 30, tzinfo=UTC)
SAVED = datetime(2026, 5, 4, 11, 0, tzinfo=UTC)
RUN_TABLES = ("runs_job", "runs_pod", "runs_podassignment", "runs_runevent", "runs_checkpoint")


def _migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate to ``targets``; the apps registry of the state reached."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state([t for t in targets if t[1] is not None]).apps


def _latest() -> list[tuple[str, str | None]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before_the_move() -> Iterator[Any]:
    """The historical apps at ingest 0015; the database migrated back to the latest afterwards."""
    try:
        yield _migrate(BEFORE)
    finally:
        _migrate(_latest())


def _rows(table: str, columns: str) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM {table} ORDER BY id")  # noqa: S608 - constants
        return cursor.fetchall()


def _seed_a_run(apps: Any) -> dict[str, int]:
    """One run in the old ingest_* tables: queue, node, job, two pods, stays, events, checkpoints."""
    queue = apps.get_model("ingest", "ClusterQueue").objects.create(name="team-a-cq")
    node = apps.get_model("ingest", "Node").objects.create(name="gpu-0007")
    job = apps.get_model("ingest", "Job").objects.create(
        namespace="train", name="llama-70b", kind="PyTorchJob", local_queue="team-a",
        cluster_queue=queue, state="running", first_seen=T0, last_seen=T1,
    )  # fmt: skip
    pods = [
        apps.get_model("ingest", "Pod").objects.create(
            job=job,
            namespace="train",
            name=f"llama-70b-worker-{i}",
            phase="Running",
            restarts=i,
            first_seen=T0,
            last_seen=T1,
        )  # fmt: skip
        for i in range(2)
    ]
    assignment = apps.get_model("ingest", "PodAssignment")
    for pod in pods:
        assignment.objects.create(pod=pod, node=node, first_seen=T0, last_seen=T1)
    event = apps.get_model("ingest", "RunEvent")
    event.objects.create(job=job, ts=T0, kind="started", pod="", detail="running when first seen")
    event.objects.create(
        job=job, ts=CRASH, kind="restart", pod="llama-70b-worker-1", detail="OOMKilled"
    )
    checkpoint = apps.get_model("ingest", "Checkpoint")
    checkpoint.objects.create(
        job=job, step=1200, ts=SAVED, duration_seconds=42.5, bytes=123_456_789_012,
        path="s3://ckpt/llama-70b/1200", source="api",
    )  # fmt: skip
    checkpoint.objects.create(
        job=job, step=1500, ts=T1, duration_seconds=None, bytes=None, path="", source="prometheus"
    )
    return {
        "queue": queue.pk,
        "node": node.pk,
        "job": job.pk,
        "pod0": pods[0].pk,
        "pod1": pods[1].pk,
    }


def _tables_named(*names: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY(%s) ORDER BY 1", [list(names)]
        )
        return [name for (name,) in cursor.fetchall()]


def test_the_move_keeps_every_run_row_with_its_values(before_the_move: Any) -> None:
    ids = _seed_a_run(before_the_move)
    assert _tables_named("ingest_job", "runs_job") == ["ingest_job"]  # seeded in the old table
    _migrate(_latest())

    assert _tables_named("ingest_job", "runs_job") == ["runs_job"]
    job, queue, node = ids["job"], ids["queue"], ids["node"]
    assert _rows(
        "runs_job",
        "id, namespace, name, kind, local_queue, cluster_queue_id, state, first_seen, last_seen",
    ) == [(job, "train", "llama-70b", "PyTorchJob", "team-a", queue, "running", T0, T1)]
    assert _rows(
        "runs_pod", "id, job_id, namespace, name, phase, restarts, first_seen, last_seen"
    ) == [
        (ids["pod0"], job, "train", "llama-70b-worker-0", "Running", 0, T0, T1),
        (ids["pod1"], job, "train", "llama-70b-worker-1", "Running", 1, T0, T1),
    ]
    assert _rows("runs_podassignment", "pod_id, node_id, first_seen, last_seen") == [
        (ids["pod0"], node, T0, T1),
        (ids["pod1"], node, T0, T1),
    ]
    assert _rows("runs_runevent", "job_id, ts, kind, pod, detail") == [
        (job, T0, "started", "", "running when first seen"),
        (job, CRASH, "restart", "llama-70b-worker-1", "OOMKilled"),
    ]
    assert _rows("runs_checkpoint", "job_id, step, ts, duration_seconds, bytes, path, source") == [
        (job, 1200, SAVED, 42.5, 123_456_789_012, "s3://ckpt/llama-70b/1200", "api"),
        (job, 1500, T1, None, None, "", "prometheus"),
    ]


def test_after_the_move_the_orm_sequences_and_cascades_work(before_the_move: Any) -> None:
    ids = _seed_a_run(before_the_move)
    _migrate(_latest())

    run = Job.objects.select_related("cluster_queue").get(namespace="train", name="llama-70b")
    assert (run.pk, run.cluster_queue.name if run.cluster_queue else None) == (
        ids["job"],
        "team-a-cq",
    )
    assert sorted(run.pods.values_list("name", flat=True)) == [
        "llama-70b-worker-0",
        "llama-70b-worker-1",
    ]
    assert list(run.checkpoints.values_list("step", flat=True)) == [1200, 1500]
    # The identity sequences moved with their tables: the next row continues after the old ones.
    assert Job.objects.create(namespace="train", name="next").pk == ids["job"] + 1
    assert Checkpoint.objects.create(job=run, step=1800, ts=T1, source="api").pk > 0
    run.delete()  # the foreign keys still point at the renamed tables: the run's rows go with it
    assert [_rows(table, "id") for table in RUN_TABLES[1:]] == [[], [], [], []]


def test_no_table_sequence_constraint_or_index_keeps_an_ingest_run_name() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relname ~ '^ingest_(job|pod|podassignment|"
            "runevent|checkpoint)(_|$)' UNION ALL SELECT conname FROM pg_constraint "
            "WHERE conrelid = ANY(%s::regclass[]) AND conname LIKE 'ingest%%'",
            [list(RUN_TABLES)],
        )
        assert cursor.fetchall() == []
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'runs_pod'::regclass ORDER BY conname"
        )
        assert [name for (name,) in cursor.fetchall()] == [
            "runs_pod_job_id_20dbd1d6_fk_runs_job_id",
            "runs_pod_pkey",
            "uniq_pod",
        ]
