"""Kueue, per ClusterQueue: pending, admitted, admission wait, evictions, preemptions, quota.

Counters (admissions, evictions, preemptions, the wait histogram's buckets) are
fetched raw and differenced per step against the window's baseline point, so a
step's increase is exact and a Kueue restart (counter reset) is handled.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from .. import queries
from ..dimensions import insert_new, upsert_cluster_queues
from ..models import Family, KueueEviction
from ..prometheus import PrometheusClient, Series
from ..stepseries import counter_increases, histogram_quantile, to_datetime
from ..store import KUEUE_TABLE, insert_rows
from .base import Batch, Source, StoreResult, Window
from .rangefetch import fetch, labelled, promql

SAMPLE_COLUMNS = (
    "pending_active",
    "pending_inadmissible",
    "admitted_active",
    "admitted",
    "wait_p50",
    "wait_p95",
)
PENDING_STATUS = {"active": "pending_active", "inadmissible": "pending_inadmissible"}


@dataclass
class KueuePayload:
    """Normalised Kueue data of one window; timestamps are unix seconds of steps after the start."""

    samples: dict[tuple[str, float], dict[str, float]] = field(default_factory=dict)
    evictions: dict[tuple[str, float, str, str], float] = field(default_factory=dict)
    quotas: dict[tuple[str, float, str, str], dict[str, float]] = field(default_factory=dict)
    seen: dict[str, tuple[float, float]] = field(default_factory=dict)
    cohorts: dict[str, str] = field(default_factory=dict)

    def see(self, queue: str, ts: float) -> None:
        """Widen the queue's first/last seen to include ts."""
        first, last = self.seen.get(queue, (ts, ts))
        self.seen[queue] = (min(first, ts), max(last, ts))

    def put(self, queue: str, ts: float, column: str, value: float) -> None:
        """Set one column of the queue's sample at ts."""
        self.see(queue, ts)
        self.samples.setdefault((queue, ts), {})[column] = value


class KueueSource(Source):
    """Reads Kueue's controller metrics into KueueSample / KueueEviction / KueueQuota."""

    family = Family.KUEUE

    def _query(
        self, client: PrometheusClient, name: str, window: Window, batch: Batch
    ) -> list[Series]:
        return fetch(client, promql(self.family, queries.KUEUE, name), window, batch)

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch every Kueue query over the window and normalise it."""
        batch = Batch(self.family, window, KueuePayload())
        start = window.start.timestamp()
        q = lambda name: self._query(client, name, window, batch)  # noqa: E731
        payload: KueuePayload = batch.payload
        for (queue, status), series in labelled(
            q("pending"), "cluster_queue", "status", batch=batch
        ):
            if status in PENDING_STATUS:
                _gauge(payload, queue, series, start, PENDING_STATUS[status])
        for (queue,), series in labelled(q("admitted_active"), "cluster_queue", batch=batch):
            _gauge(payload, queue, series, start, "admitted_active")
        for (queue,), series in labelled(q("admitted_total"), "cluster_queue", batch=batch):
            for ts, value in counter_increases(series.points, start):
                payload.put(queue, ts, "admitted", value)
        _wait_quantiles(
            payload, labelled(q("wait_buckets"), "cluster_queue", "le", batch=batch), start
        )
        _evictions(
            payload, q("evicted_total"), "cluster_queue", KueueEviction.Kind.EVICTED, start, batch
        )
        _evictions(
            payload,
            q("preempted_total"),
            "preempting_cluster_queue",
            KueueEviction.Kind.PREEMPTED,
            start,
            batch,
        )
        _quota(payload, q("quota_usage"), "usage", start, batch)
        _quota(payload, q("quota_nominal"), "nominal", start, batch)
        return batch

    def store(self, batch: Batch) -> StoreResult:
        """Upsert the queues, then write samples, evictions and quota rows once."""
        payload: KueuePayload = batch.payload
        seen = {q: (to_datetime(a), to_datetime(b)) for q, (a, b) in payload.seen.items()}
        ids = upsert_cluster_queues(seen, payload.cohorts)
        samples = [
            (to_datetime(ts), ids[queue], *(values.get(c) for c in SAMPLE_COLUMNS))
            for (queue, ts), values in payload.samples.items()
        ]
        rows = insert_rows(KUEUE_TABLE, samples)
        rows += insert_new(
            "ingest_kueueeviction",
            ("cluster_queue_id", "ts", "kind", "reason", "count"),
            [
                (ids[q], to_datetime(ts), kind, reason, n)
                for (q, ts, kind, reason), n in payload.evictions.items()
            ],
        )
        rows += insert_new(
            "ingest_kueuequota",
            ("cluster_queue_id", "ts", "flavor", "resource", "usage", "nominal"),
            [
                (ids[q], to_datetime(ts), flavor, resource, v["usage"], v.get("nominal"))
                for (q, ts, flavor, resource), v in payload.quotas.items()
                if "usage" in v
            ],
        )
        return StoreResult(rows=rows)


def _gauge(payload: KueuePayload, queue: str, series: Series, start: float, column: str) -> None:
    for ts, value in series.points:
        if ts > start:
            payload.put(queue, ts, column, value)


def _wait_quantiles(
    payload: KueuePayload, buckets: list[tuple[tuple[str, ...], Series]], start: float
) -> None:
    """p50/p95 of the admissions made during each step, from the buckets' increases."""
    per_step: dict[tuple[str, float], list[tuple[float, float]]] = defaultdict(list)
    for (queue, le), series in buckets:
        try:
            bound = float(le)
        except ValueError:
            continue
        for ts, increase in counter_increases(series.points, start):
            per_step[(queue, ts)].append((bound, increase))
    for (queue, ts), pairs in per_step.items():
        for column, q in (("wait_p50", 0.5), ("wait_p95", 0.95)):
            value = histogram_quantile(q, pairs)
            if value is not None:
                payload.put(queue, ts, column, value)


def _evictions(
    payload: KueuePayload, series: list[Series], label: str, kind: str, start: float, batch: Batch
) -> None:
    """Non-zero per-step increases of an eviction / preemption counter, by reason."""
    for (queue, reason), item in labelled(series, label, "reason", batch=batch):
        for ts, increase in counter_increases(item.points, start):
            payload.see(queue, ts)
            if increase > 0:
                payload.evictions[(queue, ts, kind, reason[:100])] = increase


def _quota(
    payload: KueuePayload, series: list[Series], column: str, start: float, batch: Batch
) -> None:
    for (queue, flavor, resource), item in labelled(
        series, "cluster_queue", "flavor", "resource", batch=batch
    ):
        if item.labels.get("cohort"):
            payload.cohorts[queue] = item.labels["cohort"]
        for ts, value in item.points:
            if ts > start:
                payload.see(queue, ts)
                payload.quotas.setdefault((queue, ts, flavor[:100], resource[:100]), {})[column] = (
                    value
                )
