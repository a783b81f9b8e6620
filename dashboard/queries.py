"""Read-only queries the dashboard needs that ``ingest.selectors`` does not offer.

Plain SELECTs over ingest's tables (the dashboard owns no tables and writes
nothing): pool-level utilization from the per-node 5-minute rollups and the latest Kueue
sample per queue. Candidates to move into ``ingest.selectors``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from math import floor

from django.db import connection


def compact(value: float | None) -> float | None:
    """Round for the wire: big rates to integers, small values to 3 decimals (half up)."""
    if value is None:
        return None
    return floor(value + 0.5) * 1.0 if abs(value) >= 1000 else floor(value * 1000 + 0.5) / 1000


def compact_all(values: list[float | None]) -> list[float | None]:
    """``compact`` of each value, inlined (a node page compacts ~5,000 values)."""
    return [
        None
        if v is None
        else floor(v + 0.5) * 1.0
        if abs(v) >= 1000
        else floor(v * 1000 + 0.5) / 1000
        for v in values
    ]


def _series(sql: str, params: dict[str, object]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def utilization_by_pool(start: datetime, end: datetime, step: int) -> list[tuple]:
    """(bucket, pool, Σutil, Σtensor·100, samples, drifted samples) from the per-node 5-minute rollups.

    A node rollup holds GPU means and GPU counts, so the sums are mean × count
    (one row per node and bucket instead of one per GPU).
    """
    sql = """
        SELECT date_bin(make_interval(secs => %(step)s), r.ts, %(start)s) AS b, n.pool,
               sum(r.util * r.util_gpus), sum(r.tensor * r.tensor_gpus) * 100, sum(r.util_gpus),
               sum(r.drifted_gpus)
        FROM ingest_noderollup r JOIN ingest_node n ON n.id = r.node_id
        WHERE r.ts >= %(start)s AND r.ts < %(end)s AND r.gpus > 0 GROUP BY 1, 2 ORDER BY 1, 2"""
    return _series(sql, {"start": start, "end": end, "step": step})


#: The overview's "Wait p95" looks this far back from a queue's latest sample.
WAIT_WINDOW = timedelta(hours=1)


def latest_queues() -> list[tuple]:
    """(queue, ts, pending active, pending inadmissible, admitted active, wait p95 s) per ClusterQueue.

    The counts are the latest sample's (of the last day). A sample's wait p95 is that of the
    admissions of its step, NULL in the steps without one, which is most steps; so the wait
    is the highest step p95 in the ``WAIT_WINDOW`` up to the latest sample (an upper bound
    of the window's p95), NULL only when nothing was admitted in it.
    """
    sql = """
        SELECT l.name, l.ts, l.pending_active, l.pending_inadmissible, l.admitted_active,
               (SELECT max(w.wait_p95) FROM ingest_kueuesample w WHERE w.cluster_queue_id = l.id
                AND w.ts > l.ts - %(window)s AND w.ts <= l.ts)
        FROM (SELECT DISTINCT ON (q.id) q.id, q.name, s.ts, s.pending_active,
                     s.pending_inadmissible, s.admitted_active
              FROM ingest_kueuesample s JOIN ingest_clusterqueue q ON q.id = s.cluster_queue_id
              WHERE s.ts >= now() - interval '1 day' ORDER BY q.id, s.ts DESC) l"""
    return sorted(_series(sql, {"window": WAIT_WINDOW}), key=lambda row: row[0])
