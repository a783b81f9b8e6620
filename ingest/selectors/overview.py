"""The cluster overview's figures: utilization per pool from the node rollups, queue states.

Plain SELECTs over ingest's tables (formerly ``dashboard.queries``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import NamedTuple

from .windows import fetch

#: The overview's "Wait p95" looks this far back from a queue's latest sample.
WAIT_WINDOW = timedelta(hours=1)


class PoolUtilization(NamedTuple):
    """One pool in one bucket: util and tensor·100 summed over GPUs, GPU samples, drifted ones."""

    bucket: datetime
    pool: str
    util_sum: float | None
    tensor_sum: float | None
    gpus: int
    drifted_gpus: int


class QueueState(NamedTuple):
    """A ClusterQueue's latest sample (of the last day) and its highest step wait p95 before it."""

    queue: str
    ts: datetime
    pending_active: float | None
    pending_inadmissible: float | None
    admitted_active: float | None
    wait_p95: float | None


def utilization_by_pool(start: datetime, end: datetime, step: int) -> list[PoolUtilization]:
    """Per ``step`` bucket and pool, from the per-node 5-minute rollups, by bucket and pool.

    A node rollup holds GPU means and GPU counts, so the sums are mean × count
    (one row per node and bucket instead of one per GPU).
    """
    sql = """
        SELECT date_bin(make_interval(secs => %(step)s), r.ts, %(start)s) AS b, n.pool,
               sum(r.util * r.util_gpus), sum(r.tensor * r.tensor_gpus) * 100, sum(r.util_gpus),
               sum(r.drifted_gpus)
        FROM ingest_noderollup r JOIN ingest_node n ON n.id = r.node_id
        WHERE r.ts >= %(start)s AND r.ts < %(end)s AND r.gpus > 0 GROUP BY 1, 2 ORDER BY 1, 2"""
    rows = fetch(sql, {"start": start, "end": end, "step": step})
    return [PoolUtilization._make(row) for row in rows]


def latest_queues() -> list[QueueState]:
    """The latest state of every ClusterQueue sampled in the last day, by queue name.

    The counts are the latest sample's. A sample's wait p95 is that of the admissions of its
    step, NULL in the steps without one, which is most steps; so the wait is the highest step
    p95 in the ``WAIT_WINDOW`` up to the latest sample (an upper bound of the window's p95),
    NULL only when nothing was admitted in it.
    """
    sql = """
        SELECT l.name, l.ts, l.pending_active, l.pending_inadmissible, l.admitted_active,
               (SELECT max(w.wait_p95) FROM ingest_kueuesample w WHERE w.cluster_queue_id = l.id
                AND w.ts > l.ts - %(window)s AND w.ts <= l.ts)
        FROM (SELECT DISTINCT ON (q.id) q.id, q.name, s.ts, s.pending_active,
                     s.pending_inadmissible, s.admitted_active
              FROM ingest_kueuesample s JOIN ingest_clusterqueue q ON q.id = s.cluster_queue_id
              WHERE s.ts >= now() - interval '1 day' ORDER BY q.id, s.ts DESC) l"""
    rows = fetch(sql, {"window": WAIT_WINDOW})
    return sorted(map(QueueState._make, rows), key=lambda row: row.queue)
