"""The write API ingest uses for runs: idempotent upserts of jobs, pods, assignments, events, checkpoints.

Ingest normalises kube-state-metrics and the checkpoint gauges (``ingest.runs_normalize``,
``ingest.sources.runs``, ``ingest.sources.checkpoints``) and hands the results here, keyed by
plain ids it already resolved (nodes, ClusterQueues); this module is the only one outside
``runs.selectors`` that ingest may import (an import-linter contract). ``first_seen`` only
moves earlier and ``last_seen`` only later, so re-ingesting an old window never rewinds
anything; rows are written in key order so concurrent families cannot deadlock on each other.
Each upsert returns key → id for the rows it was given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from ingest.dimensions import insert_new
from ingest.store import json_rows

from .models import Checkpoint, Job, RunEvent

#: The vocabulary of the writes: a job's state and a run event's kind (``runs.models``).
JobState = Job.State
EventKind = RunEvent.Kind

RunKey = tuple[str, str]  # (namespace, name) of a job or a pod
Seen = tuple[datetime, datetime]
#: (pod id, node id, first seen, last seen) of one stay of a pod on a node.
Assignment = tuple[int, int, datetime, datetime]
#: (job id, ts, kind, pod, detail) of one run event.
Event = tuple[int, datetime, str, str, str]
#: (job id, step, ts, write duration in seconds) of one checkpoint read from the gauges.
GaugeCheckpointRow = tuple[int, int, datetime, float | None]


def _widen(table: str) -> str:
    return (
        f"first_seen = LEAST({table}.first_seen, EXCLUDED.first_seen), "
        f"last_seen = GREATEST({table}.last_seen, EXCLUDED.last_seen)"
    )


def _ids(table: str, keys: Sequence[RunKey]) -> dict[RunKey, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.namespace, t.name, t.id FROM {table} t "  # noqa: S608 - a constant
            "JOIN unnest(%s::text[], %s::text[]) AS k(ns, nm) ON t.namespace = k.ns AND t.name = k.nm",
            [[k[0] for k in keys], [k[1] for k in keys]],
        )
        return {(ns, name): pk for ns, name, pk in cursor.fetchall()}


@dataclass
class JobSeen:
    """A job observed over a window: when, its LocalQueue, and its state at ``last``."""

    first: datetime
    last: datetime
    local_queue: str = ""
    state: str = ""
    kind: str = "Job"


def upsert_jobs(seen: Mapping[RunKey, JobSeen]) -> dict[RunKey, int]:
    """Create or widen jobs; the state is taken only from a window at least as new as the row's."""
    if not seen:
        return {}
    rows = [
        (ns, name, j.kind or "Job", j.local_queue, j.state or JobState.UNKNOWN, j.first, j.last)
        for (ns, name), j in sorted(seen.items())
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO runs_job (namespace, name, kind, local_queue, state, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, name) DO UPDATE SET "
            "kind = EXCLUDED.kind, "
            "state = CASE WHEN EXCLUDED.last_seen >= runs_job.last_seen "
            "AND EXCLUDED.state <> 'unknown' THEN EXCLUDED.state ELSE runs_job.state END, "
            "local_queue = COALESCE(NULLIF(EXCLUDED.local_queue, ''), runs_job.local_queue), "
            f"{_widen('runs_job')}",
            rows,
        )
    return _ids("runs_job", list(seen))


def ensure_jobs(seen: Mapping[RunKey, Seen]) -> dict[RunKey, int]:
    """Create jobs that do not exist yet (state unknown); existing ones are left alone."""
    if not seen:
        return {}
    rows = [(ns, name, first, last) for (ns, name), (first, last) in sorted(seen.items())]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO runs_job (namespace, name, kind, local_queue, state, first_seen, last_seen) "
            "VALUES (%s, %s, 'Job', '', 'unknown', %s, %s) ON CONFLICT (namespace, name) DO NOTHING",
            rows,
        )
    return _ids("runs_job", list(seen))


def link_cluster_queues(queue_of_job: Mapping[int, int]) -> None:
    """Point jobs at their ClusterQueue (job id → ClusterQueue id, resolved by ingest)."""
    pairs = sorted(queue_of_job.items())
    if not pairs:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE runs_job j SET cluster_queue_id = k.queue "
            "FROM unnest(%s::bigint[], %s::bigint[]) AS k(job, queue) "
            "WHERE j.id = k.job AND j.cluster_queue_id IS DISTINCT FROM k.queue",
            [[p[0] for p in pairs], [p[1] for p in pairs]],
        )


@dataclass
class PodSeen:
    """A pod observed over a window, with its phase and restart count at ``last``."""

    job_id: int | None
    first: datetime
    last: datetime
    phase: str = ""
    restarts: int | None = None


def upsert_pods(seen: Mapping[RunKey, PodSeen]) -> dict[RunKey, int]:
    """Create or widen pods; phase and restarts come from the newest window only."""
    if not seen:
        return {}
    rows = [
        (ns, name, p.job_id, p.phase, p.restarts, p.first, p.last, p.restarts, p.restarts)
        for (ns, name), p in sorted(seen.items())
    ]
    newer = "EXCLUDED.last_seen >= runs_pod.last_seen"
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO runs_pod (namespace, name, job_id, phase, restarts, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s, COALESCE(%s::int, 0), %s, %s) "
            "ON CONFLICT (namespace, name) DO UPDATE SET "
            "job_id = COALESCE(EXCLUDED.job_id, runs_pod.job_id), "
            f"phase = CASE WHEN {newer} AND EXCLUDED.phase <> '' THEN EXCLUDED.phase "
            "ELSE runs_pod.phase END, "
            f"restarts = CASE WHEN {newer} AND %s::int IS NOT NULL THEN %s::int "
            "ELSE runs_pod.restarts END, "
            f"{_widen('runs_pod')}",
            rows,
        )
    return _ids("runs_pod", list(seen))


def store_assignments(rows: Sequence[Assignment], step: int) -> int:
    """Extend an assignment the interval touches or overlaps, else insert a new one; rows inserted.

    A (pod, node) seen once in the window (the steady state) goes through one
    set-based statement; one seen in several runs (a gap inside the window) row
    by row, in time order, since its later runs may extend what the earlier inserted.
    """
    gap = timedelta(seconds=step * 1.5)
    ordered = sorted(rows)
    runs_of = Counter((pod, node) for pod, node, _first, _last in ordered)
    with connection.cursor() as cursor:
        created = _store_single_assignments(
            cursor, [row for row in ordered if runs_of[row[:2]] == 1], gap
        )
        for pod_id, node_id, first, last in (row for row in ordered if runs_of[row[:2]] > 1):
            cursor.execute(
                "UPDATE runs_podassignment SET first_seen = LEAST(first_seen, %s), "
                "last_seen = GREATEST(last_seen, %s) WHERE pod_id = %s AND node_id = %s "
                "AND first_seen <= %s AND last_seen >= %s",
                [first, last, pod_id, node_id, last + gap, first - gap],
            )
            if cursor.rowcount == 0:
                cursor.execute(
                    "INSERT INTO runs_podassignment (pod_id, node_id, first_seen, last_seen) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                    [pod_id, node_id, first, last],
                )
                created += max(cursor.rowcount, 0)
    return created


def _store_single_assignments(cursor: Any, rows: list[Assignment], gap: timedelta) -> int:
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
            UPDATE runs_podassignment a SET first_seen = LEAST(a.first_seen, seen.f),
                last_seen = GREATEST(a.last_seen, seen.l)
            FROM seen WHERE a.pod_id = seen.pod AND a.node_id = seen.node
                AND a.first_seen <= seen.l + %s AND a.last_seen >= seen.f - %s
            RETURNING seen.i
        )
        INSERT INTO runs_podassignment (pod_id, node_id, first_seen, last_seen)
        SELECT pod, node, f, l FROM seen WHERE i NOT IN (SELECT i FROM extended)
        ON CONFLICT DO NOTHING
        """,
        [json_rows(rows), gap, gap],
    )
    return max(cursor.rowcount, 0)


def insert_events(rows: Sequence[Event]) -> int:
    """Run events not yet known (unique per job, ts, kind, pod); returns how many were new."""
    return insert_new("runs_runevent", ("job_id", "ts", "kind", "pod", "detail"), list(rows))


def add_started_events(started: Mapping[int, datetime]) -> int:
    """A job already running at the window's baseline gets a ``started`` event if it has none."""
    rows = [(job_id, ts, job_id) for job_id, ts in sorted(started.items())]
    if not rows:
        return 0
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO runs_runevent (job_id, ts, kind, pod, detail) SELECT %s, %s, "
            f"'{EventKind.STARTED}', '', 'running when first seen' WHERE NOT EXISTS "
            f"(SELECT 1 FROM runs_runevent WHERE job_id = %s AND kind = '{EventKind.STARTED}') "
            "ON CONFLICT DO NOTHING",
            rows,
        )
        return max(cursor.rowcount, 0)


def insert_gauge_checkpoints(rows: Sequence[GaugeCheckpointRow]) -> int:
    """Checkpoints read from the Prometheus gauges, new per (job, step); returns how many were new."""
    return insert_new(
        "runs_checkpoint",
        ("job_id", "step", "ts", "duration_seconds", "bytes", "path", "source"),
        [(*row, None, "", Checkpoint.Source.PROMETHEUS) for row in rows],
    )
