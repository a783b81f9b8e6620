"""Runs: jobs → pods → nodes over time, LocalQueue, phase, restarts and run events.

A run is a top-level workload: a Kubernetes Job (namespace + ``created_by_name`` of its
pods), or the JobSet, Kubeflow job, RayJob / RayCluster or LeaderWorkerSet the controllers'
pod labels name (``runs_normalize.pod_workloads``). A pod's
stay on a node is one ``PodAssignment`` whose ``last_seen`` is extended while the
pod is seen there at consecutive steps; a gap or a move starts a new row. A rise
of the restart count is a ``restart`` RunEvent (the runs page's "crash") at the
step it was observed. ``Job.cluster_queue`` comes from ``INGEST_LOCAL_QUEUE_MAP``
("namespace/local-queue" or "local-queue" → ClusterQueue name), else from a
ClusterQueue named like the LocalQueue: Kueue exports no LocalQueue → ClusterQueue
mapping as metrics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import timedelta

from django.conf import settings
from django.db import connection

from .. import queries
from ..dimensions import JobSeen, PodSeen, insert_new, upsert_jobs, upsert_pods
from ..models import Family, RunEvent
from ..prometheus import PrometheusClient, Series
from ..runs_normalize import (
    JobKey,
    RunsData,
    add_phases,
    add_pod_info,
    add_queues,
    add_reasons,
    add_restarts,
    pod_workloads,
    terminated_reasons,
)
from ..stepseries import to_datetime
from ..store import json_rows, upsert_nodes
from .base import Batch, Source, StoreResult, Window
from .rangefetch import fetch, promql


class RunsSource(Source):
    """Jobs, pods, pod → node assignments and run events from kube-state-metrics."""

    family = Family.RUNS

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch the pod series of the window and normalise them into ``RunsData``."""
        batch = Batch(self.family, window, RunsData())
        start, step = window.start.timestamp(), float(window.step)

        def query(name: str) -> list[Series]:
            return fetch(client, promql(self.family, queries.RUNS, name), window, batch)

        data: RunsData = batch.payload
        workloads = pod_workloads(query("pod_workload"))
        batch.skipped += add_pod_info(data, query("pod_info"), step, workloads)
        add_queues(data, query("pod_queue"))
        add_phases(data, query("pod_phase"), start)
        add_restarts(
            data, query("pod_restarts"), start, terminated_reasons(query("pod_terminated"))
        )
        add_reasons(data, query("pod_reason"), start, step)
        batch.unfit.update(data.unfit)
        return batch

    def store(self, batch: Batch) -> StoreResult:
        """Upsert nodes, jobs and pods; extend or add assignments; write new events."""
        data: RunsData = batch.payload
        node_ids = upsert_nodes(
            {n: (to_datetime(a), to_datetime(b)) for n, (a, b) in data.nodes.items()}
        )
        job_ids = upsert_jobs(
            {
                key: JobSeen(
                    to_datetime(j.first), to_datetime(j.last), j.local_queue, j.state, j.kind
                )
                for key, j in data.jobs.items()
            }
        )
        _link_cluster_queues(job_ids, {k: j.local_queue for k, j in data.jobs.items()})
        pod_ids = upsert_pods(
            {
                key: PodSeen(
                    job_ids.get(p.job),
                    to_datetime(p.first),
                    to_datetime(p.last),
                    p.phase,
                    p.restarts,
                )
                for key, p in data.pods.items()
            }
        )
        rows = _store_assignments(data, pod_ids, node_ids, batch.window.step)
        rows += insert_new(
            "ingest_runevent",
            ("job_id", "ts", "kind", "pod", "detail"),
            [(job_ids[job], to_datetime(ts), kind, pod, detail)
             for (job, ts, kind, pod), detail in data.events.items()],
        )  # fmt: skip
        rows += _started_hints(job_ids, data.started_hints)
        return StoreResult(rows=rows)


def _store_assignments(
    data: RunsData, pod_ids: Mapping[tuple[str, str], int], node_ids: Mapping[str, int], step: int
) -> int:
    """Extend an assignment the interval touches or overlaps, else insert a new one.

    A (pod, node) seen once in the window (the steady state) goes through one
    set-based statement; one seen in several runs (a gap inside the window) row
    by row, in time order, since its later runs may extend what the earlier inserted.
    """
    gap = timedelta(seconds=step * 1.5)
    rows = [
        (pod_ids[pod_key], node_ids[node], to_datetime(first), to_datetime(last))
        for pod_key, node, first, last in sorted(data.assignments)
    ]
    runs_of = Counter((pod, node) for pod, node, _first, _last in rows)
    single = [row for row in rows if runs_of[row[:2]] == 1]
    with connection.cursor() as cursor:
        created = _store_single_assignments(cursor, single, gap)
        for pod_id, node_id, first, last in (row for row in rows if runs_of[row[:2]] > 1):
            cursor.execute(
                "UPDATE ingest_podassignment SET first_seen = LEAST(first_seen, %s), "
                "last_seen = GREATEST(last_seen, %s) WHERE pod_id = %s AND node_id = %s "
                "AND first_seen <= %s AND last_seen >= %s",
                [first, last, pod_id, node_id, last + gap, first - gap],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO ingest_podassignment (pod_id, node_id, first_seen, last_seen) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [pod_id, node_id, first, last],
                )
                created += max(cursor.rowcount, 0)
    return created


def _store_single_assignments(cursor, rows: list[tuple], gap: timedelta) -> int:  # noqa: ANN001
    """Extend-or-insert for (pod, node) pairs with one run each: one statement; rows inserted."""
    if not rows:
        return 0
    cursor.execute(
        """
        WITH seen AS (
            SELECT ordinality AS i, (r->>0)::bigint AS pod, (r->>1)::bigint AS node,
                   (r->>2)::timestamptz AS f, (r->>3)::timestamptz AS l
            FROM json_array_elements(%s::json) WITH ORDINALITY AS t(r, ordinality)
        ), extended AS (
            UPDATE ingest_podassignment a SET first_seen = LEAST(a.first_seen, seen.f),
                last_seen = GREATEST(a.last_seen, seen.l)
            FROM seen WHERE a.pod_id = seen.pod AND a.node_id = seen.node
                AND a.first_seen <= seen.l + %s AND a.last_seen >= seen.f - %s
            RETURNING seen.i
        )
        INSERT INTO ingest_podassignment (pod_id, node_id, first_seen, last_seen)
        SELECT pod, node, f, l FROM seen WHERE i NOT IN (SELECT i FROM extended)
        ON CONFLICT DO NOTHING
        """,
        [json_rows(rows), gap, gap],
    )
    return max(cursor.rowcount, 0)


def _started_hints(job_ids: Mapping[JobKey, int], hints: Mapping[JobKey, float]) -> int:
    """A job already running at the window's baseline gets a ``started`` event if it has none."""
    rows = [(job_ids[key], to_datetime(ts), job_ids[key]) for key, ts in sorted(hints.items())]
    if not rows:
        return 0
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_runevent (job_id, ts, kind, pod, detail) SELECT %s, %s, "
            f"'{RunEvent.Kind.STARTED}', '', 'running when first seen' WHERE NOT EXISTS "
            f"(SELECT 1 FROM ingest_runevent WHERE job_id = %s AND kind = '{RunEvent.Kind.STARTED}') "
            "ON CONFLICT DO NOTHING",
            rows,
        )
        return max(cursor.rowcount, 0)


def cluster_queue_name(namespace: str, local_queue: str, mapping: Mapping[str, str]) -> str:
    """The ClusterQueue a LocalQueue feeds, per the configured map (default: the same name)."""
    return mapping.get(f"{namespace}/{local_queue}") or mapping.get(local_queue) or local_queue


def _link_cluster_queues(job_ids: Mapping[JobKey, int], local_queues: Mapping[JobKey, str]) -> None:
    mapping: Mapping[str, str] = getattr(settings, "INGEST_LOCAL_QUEUE_MAP", {}) or {}
    pairs = sorted(
        (job_ids[key], cluster_queue_name(key[0], lq, mapping))
        for key, lq in local_queues.items()
        if lq and key in job_ids
    )
    if not pairs:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ingest_job j SET cluster_queue_id = cq.id FROM unnest(%s::bigint[], %s::text[]) "
            "AS k(job, queue) JOIN ingest_clusterqueue cq ON cq.name = k.queue "
            "WHERE j.id = k.job AND j.cluster_queue_id IS DISTINCT FROM cq.id",
            [[p[0] for p in pairs], [p[1] for p in pairs]],
        )
