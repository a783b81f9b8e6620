"""Idempotent upserts of queue rows with first/last seen (nodes: ``store``; jobs and pods: ``runs.store``).

``first_seen`` only moves earlier and ``last_seen`` only later, so re-ingesting an
old window never rewinds anything; rows are written in key order so concurrent
families upserting the same nodes cannot deadlock on each other. Each helper
returns key → id for the rows it was given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def cluster_queue_ids(names: Iterable[str]) -> dict[str, int]:
    """ClusterQueue name → id of those that exist."""
    return dict(
        _ids("SELECT name, id FROM ingest_clusterqueue WHERE name = ANY(%s)", [sorted(set(names))])
    )


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
