"""Idempotent upserts of queue, job and pod rows with first/last seen (nodes: ``store``).

``first_seen`` only moves earlier and ``last_seen`` only later, so re-ingesting an
old window never rewinds anything; rows are written in key order so concurrent
families upserting the same nodes cannot deadlock on each other. Each helper
returns key → id for the rows it was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

Seen = tuple[datetime, datetime]


def _widen(table: str) -> str:
    return (
        f"first_seen = LEAST({table}.first_seen, EXCLUDED.first_seen), "
        f"last_seen = GREATEST({table}.last_seen, EXCLUDED.last_seen)"
    )


def _changed(table: str) -> str:
    return f"{table}.first_seen > EXCLUDED.first_seen OR {table}.last_seen < EXCLUDED.last_seen"


def _ids(sql: str, params: list[object]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def upsert_cluster_queues(seen: Mapping[str, Seen], cohorts: Mapping[str, str]) -> dict[str, int]:
    """Create missing ClusterQueues, widen first/last seen, set the cohort when known."""
    if not seen:
        return {}
    rows = [(name, cohorts.get(name, ""), f, la) for name, (f, la) in sorted(seen.items())]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_clusterqueue (name, cohort, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
            f"{_widen('ingest_clusterqueue')}, cohort = COALESCE(NULLIF(EXCLUDED.cohort, ''), "
            "ingest_clusterqueue.cohort) WHERE "
            f"{_changed('ingest_clusterqueue')} OR (EXCLUDED.cohort <> '' AND "
            "EXCLUDED.cohort <> ingest_clusterqueue.cohort)",
            rows,
        )
    return dict(_ids("SELECT name, id FROM ingest_clusterqueue WHERE name = ANY(%s)", [list(seen)]))


@dataclass
class JobSeen:
    """A job observed over a window: when, its LocalQueue, and its state at ``last``."""

    first: datetime
    last: datetime
    local_queue: str = ""
    state: str = ""
    kind: str = "Job"


def _job_ids(keys: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
    found = _ids(
        "SELECT j.namespace, j.name, j.id FROM ingest_job j JOIN unnest(%s::text[], %s::text[]) "
        "AS k(ns, nm) ON j.namespace = k.ns AND j.name = k.nm",
        [[k[0] for k in keys], [k[1] for k in keys]],
    )
    return {(ns, name): pk for ns, name, pk in found}


def upsert_jobs(seen: Mapping[tuple[str, str], JobSeen]) -> dict[tuple[str, str], int]:
    """Create or widen jobs; the state is taken only from a window at least as new as the row's."""
    if not seen:
        return {}
    rows = [
        (ns, name, j.kind or "Job", j.local_queue, j.state or "unknown", j.first, j.last)
        for (ns, name), j in sorted(seen.items())
    ]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_job (namespace, name, kind, local_queue, state, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (namespace, name) DO UPDATE SET "
            "kind = EXCLUDED.kind, "
            "state = CASE WHEN EXCLUDED.last_seen >= ingest_job.last_seen "
            "AND EXCLUDED.state <> 'unknown' THEN EXCLUDED.state ELSE ingest_job.state END, "
            "local_queue = COALESCE(NULLIF(EXCLUDED.local_queue, ''), ingest_job.local_queue), "
            f"{_widen('ingest_job')}",
            rows,
        )
    return _job_ids(list(seen))


def ensure_jobs(seen: Mapping[tuple[str, str], Seen]) -> dict[tuple[str, str], int]:
    """Create jobs that do not exist yet (state unknown); existing ones are left alone."""
    if not seen:
        return {}
    rows = [(ns, name, first, last) for (ns, name), (first, last) in sorted(seen.items())]
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_job (namespace, name, kind, local_queue, state, first_seen, last_seen) "
            "VALUES (%s, %s, 'Job', '', 'unknown', %s, %s) ON CONFLICT (namespace, name) DO NOTHING",
            rows,
        )
    return _job_ids(list(seen))


@dataclass
class PodSeen:
    """A pod observed over a window, with its phase and restart count at ``last``."""

    job_id: int | None
    first: datetime
    last: datetime
    phase: str = ""
    restarts: int | None = None


def upsert_pods(seen: Mapping[tuple[str, str], PodSeen]) -> dict[tuple[str, str], int]:
    """Create or widen pods; phase and restarts come from the newest window only."""
    if not seen:
        return {}
    rows = [
        (ns, name, p.job_id, p.phase, p.restarts, p.first, p.last, p.restarts, p.restarts)
        for (ns, name), p in sorted(seen.items())
    ]
    newer = "EXCLUDED.last_seen >= ingest_pod.last_seen"
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_pod (namespace, name, job_id, phase, restarts, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s, COALESCE(%s::int, 0), %s, %s) "
            "ON CONFLICT (namespace, name) DO UPDATE SET "
            "job_id = COALESCE(EXCLUDED.job_id, ingest_pod.job_id), "
            f"phase = CASE WHEN {newer} AND EXCLUDED.phase <> '' THEN EXCLUDED.phase "
            "ELSE ingest_pod.phase END, "
            f"restarts = CASE WHEN {newer} AND %s::int IS NOT NULL THEN %s::int "
            "ELSE ingest_pod.restarts END, "
            f"{_widen('ingest_pod')}",
            rows,
        )
    found = _ids(
        "SELECT p.namespace, p.name, p.id FROM ingest_pod p JOIN unnest(%s::text[], %s::text[]) "
        "AS k(ns, nm) ON p.namespace = k.ns AND p.name = k.nm",
        [[k[0] for k in seen], [k[1] for k in seen]],
    )
    return {(ns, name): pk for ns, name, pk in found}


def insert_new(table: str, columns: tuple[str, ...], rows: list[tuple]) -> int:
    """INSERT rows, skipping those whose unique key already exists; returns how many were new."""
    if not rows:
        return 0
    placeholders = ", ".join(["%s"] * len(columns))
    with connection.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders}) "
            "ON CONFLICT DO NOTHING",
            sorted(rows, key=repr),
        )
        return max(cursor.rowcount, 0)
