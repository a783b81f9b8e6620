"""The queues page's read side: Kueue history per ClusterQueue, evictions, quota, stalls.

The rows come from ingest, which owns the Kueue tables (``ingest.run_series``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ingest import run_series
from ingest.models import ClusterQueue

#: A queue is stalled when it had pending workloads and admitted nothing for this long.
STALL_WINDOW = timedelta(minutes=15)
#: At most this many points per queue series (the bucket widens for long windows).
MAX_POINTS = 720
MIN_BUCKET_SECONDS = 30


@dataclass
class QueueHistory:
    """One ClusterQueue over a window: bucketed series, eviction totals, latest quota, stall flag."""

    queue: ClusterQueue
    times: list[datetime] = field(default_factory=list)
    pending_active: list[float | None] = field(default_factory=list)
    pending_inadmissible: list[float | None] = field(default_factory=list)
    admitted_active: list[float | None] = field(default_factory=list)
    admitted: list[float | None] = field(default_factory=list)
    wait_p50: list[float | None] = field(default_factory=list)
    wait_p95: list[float | None] = field(default_factory=list)
    evictions: list[dict[str, object]] = field(default_factory=list)
    quota: list[dict[str, object]] = field(default_factory=list)
    stalled: bool = False

    def latest(self, series: str) -> float | None:
        """The newest non-null value of a series."""
        for value in reversed(getattr(self, series)):
            if value is not None:
                return value
        return None


def bucket_seconds(start: datetime, end: datetime) -> int:
    """Bucket width so that a window has at most ``MAX_POINTS`` points."""
    span = (end - start).total_seconds()
    return max(MIN_BUCKET_SECONDS, int(-(-span // MAX_POINTS)))


def _series(histories: dict[int, QueueHistory], start: datetime, end: datetime) -> None:
    for row in run_series.kueue_buckets(start, end, bucket_seconds(start, end)):
        queue_id, bucket, active, inadmissible, running, admitted, p50, p95 = row
        history = histories.get(queue_id)
        if history is None:
            continue
        history.times.append(bucket)
        history.pending_active.append(active)
        history.pending_inadmissible.append(inadmissible)
        history.admitted_active.append(running)
        history.admitted.append(admitted)
        history.wait_p50.append(p50)
        history.wait_p95.append(p95)


def _stalls(histories: dict[int, QueueHistory], end: datetime) -> None:
    """Pending the whole stall window (every sample) and not one admission: stalled."""
    for queue_id in run_series.stalled_queue_ids(end - STALL_WINDOW, end):
        if queue_id in histories:
            histories[queue_id].stalled = True


def _evictions(histories: dict[int, QueueHistory], start: datetime, end: datetime) -> None:
    for row in run_series.eviction_totals(list(histories), start, end):
        histories[row["cluster_queue_id"]].evictions.append(
            {"kind": row["kind"], "reason": row["reason"], "count": row["total"]}
        )


def _quota(histories: dict[int, QueueHistory], end: datetime) -> None:
    for row in run_series.latest_quota(list(histories), end):
        histories[row.pop("cluster_queue_id")].quota.append(row)


def queue_histories(start: datetime, end: datetime) -> list[QueueHistory]:
    """Every ClusterQueue seen in the window, with its history (five queries in all)."""
    histories = {queue.pk: QueueHistory(queue=queue) for queue in run_series.queues_seen(start)}
    if histories:
        _series(histories, start, end)
        _stalls(histories, end)
        _evictions(histories, start, end)
        _quota(histories, end)
    return sorted(histories.values(), key=lambda h: (not h.stalled, h.queue.name))


def evictions_by_reason(histories: list[QueueHistory]) -> dict[tuple[str, str], dict[str, float]]:
    """``(kind, reason) → {queue: count}`` for a stacked chart."""
    table: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for history in histories:
        for row in history.evictions:
            table[(str(row["kind"]), str(row["reason"]))][history.queue.name] = float(row["count"])
    return dict(table)
