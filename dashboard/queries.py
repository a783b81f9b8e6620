"""Read-only queries the dashboard needs that ``ingest.selectors`` does not offer.

Plain SELECTs over ingest's tables (the dashboard owns no tables and writes
nothing): pool-level utilization from the 5-minute rollups and the latest Kueue
sample per queue. Candidates to move into ``ingest.selectors``.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from .choices import DRIFT


def compact(value: float | None) -> float | None:
    """Round for the wire: big rates to integers, small values to 3 decimals."""
    if value is None:
        return None
    return float(round(value)) if abs(value) >= 1000 else round(value, 3)


def _series(sql: str, params: dict[str, object]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def utilization_by_pool(start: datetime, end: datetime, step: int) -> list[tuple]:
    """(bucket, pool, Σutil, Σtensor·100, samples, drifted samples) from the 5-minute GPU rollups."""
    sql = """
        SELECT date_bin(make_interval(secs => %(step)s), r.ts, %(start)s) AS b, n.pool,
               sum(r.util), sum(r.tensor) * 100, count(r.util),
               count(*) FILTER (WHERE r.util >= %(umin)s AND r.tensor <= %(tmax)s)
        FROM ingest_gpurollup r JOIN ingest_node n ON n.id = r.node_id
        WHERE r.ts >= %(start)s AND r.ts < %(end)s GROUP BY 1, 2 ORDER BY 1, 2"""
    params = {
        "start": start,
        "end": end,
        "step": step,
        "umin": DRIFT.util_min_percent,
        "tmax": DRIFT.tensor_max_ratio,
    }
    return _series(sql, params)


def latest_queues() -> list[tuple]:
    """(queue, ts, pending active, pending inadmissible, admitted active, wait p95 s) per ClusterQueue."""
    sql = """
        SELECT DISTINCT ON (q.id) q.name, s.ts, s.pending_active, s.pending_inadmissible,
               s.admitted_active, s.wait_p95
        FROM ingest_kueuesample s JOIN ingest_clusterqueue q ON q.id = s.cluster_queue_id
        WHERE s.ts >= now() - interval '1 day' ORDER BY q.id, s.ts DESC"""
    return sorted(_series(sql, {}), key=lambda row: row[0])
