"""Kueue accounting: pending/admitted workloads and the counters Kueue keeps since it started."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from simulator.faults import FaultKind
from simulator.model import REBOOT_SECONDS, Cluster
from simulator.schedule import PREEMPTED, SlotSchedule
from simulator.topology import QUEUES, Queue

#: Kueue pkg/metrics/metrics.go ``generateExponentialBuckets(16)``: 1, then 2.5 doubling 15 times
#: (… 40960 s), for admission_wait_time_seconds and execution_time_seconds (kubernetes-sigs/kueue
#: v0.19.2 8eab68778fc1b52affe165fdf5af29d1e9b4f3cb; execution_time_seconds from ff69552e79ad).
WAIT_BUCKETS = (1.0, *(2.5 * 2**i for i in range(15)))
EXECUTION_BUCKETS = WAIT_BUCKETS


@dataclass
class Histogram:
    """Observations sorted by time, with prefix sums so any instant's buckets are a bisect away."""

    buckets: tuple[float, ...]
    times: list[float] = field(default_factory=list)
    sums: list[float] = field(default_factory=lambda: [0.0])
    counts: list[list[int]] = field(default_factory=list)

    def build(self, observations: list[tuple[float, float]]) -> Histogram:
        """Fill from (time, value) pairs."""
        observations.sort()
        self.counts = [[0] for _ in self.buckets]
        for when, value in observations:
            self.times.append(when)
            self.sums.append(self.sums[-1] + value)
            for i, le in enumerate(self.buckets):
                self.counts[i].append(self.counts[i][-1] + (value <= le))
        return self

    def at(self, t: float) -> tuple[list[int], float, int]:
        """(cumulative bucket counts, sum, count) of observations made by t."""
        n = bisect.bisect_right(self.times, t)
        return [c[n] for c in self.counts], self.sums[n], n


@dataclass
class QueueLedger:
    """Everything a ClusterQueue's counters need between Kueue's start and a horizon."""

    boot: float
    horizon: float
    admissions: Histogram
    executions: Histogram
    evictions: list[float]


@dataclass(frozen=True)
class QueueStatus:
    """One ClusterQueue at one instant, as Kueue's metrics report it."""

    queue: Queue
    pending: int
    admitted_active: int
    admitted_total: int
    wait_buckets: list[int]
    wait_sum: float
    execution_buckets: list[int]
    execution_sum: float
    execution_count: int
    evicted_total: int
    nominal_gpus: int
    used_gpus: int


class QueueModel:
    """Computes QueueStatus for each ClusterQueue, caching ledgers per Kueue restart."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._ledgers: dict[str, QueueLedger] = {}

    def schedules(self, queue: Queue) -> list[SlotSchedule]:
        """The slot schedules whose runs go through this queue."""
        return [s for s in self.cluster.schedules if s.slot.queue == queue]

    def queues(self) -> list[Queue]:
        """The ClusterQueues in use (inference runs outside Kueue)."""
        return list(QUEUES)

    def _stalls(self, queue: Queue) -> list[tuple[float, float, float]]:
        faults = self.cluster.faults.of_kind(FaultKind.KUEUE_STALL)
        return [
            (f.start, f.end, float(f.params["arrival_seconds"]))
            for f in faults
            if f.queue in (None, queue.cluster_queue)
        ]

    def ledger(self, queue: Queue, t: float) -> QueueLedger:
        """The queue's ledger covering t (rebuilt after a Kueue restart or past the horizon)."""
        boot = self.cluster.controller_boot(t)
        cached = self._ledgers.get(queue.cluster_queue)
        if cached and cached.boot == boot and t <= cached.horizon:
            return cached
        horizon = min(boot + REBOOT_SECONDS, t + 86400.0)
        admissions, executions, evictions = [], [], []
        for schedule in self.schedules(queue):
            for k in range(schedule.index_at(boot), schedule.index_at(horizon) + 1):
                run = schedule.run(k)
                if run is None:
                    continue
                if run.admitted_at >= boot:
                    admissions.append((run.admitted_at, run.admitted_at - run.queued_at))
                if run.end >= boot:
                    executions.append((run.end, run.end - run.admitted_at))
                    if run.outcome == PREEMPTED:
                        evictions.append(run.end)
        for start, end, every in self._stalls(queue):
            arrival = start
            while arrival < end:
                if end >= boot:
                    admissions.append((end, end - arrival))
                arrival += every
        ledger = QueueLedger(
            boot,
            horizon,
            Histogram(WAIT_BUCKETS).build(admissions),
            Histogram(EXECUTION_BUCKETS).build(executions),
            sorted(evictions),
        )
        self._ledgers[queue.cluster_queue] = ledger
        return ledger

    def status(self, queue: Queue, t: float) -> QueueStatus:
        """The queue's gauges and counters at t."""
        pending = active = used = nominal = 0
        for schedule in self.schedules(queue):
            gpus = len(schedule.slot.nodes) * self.cluster.spec.gpus_per_node
            nominal += gpus
            run = schedule.run_at(t)
            if run is None or t < run.admitted_at:
                pending += 1
            elif t < run.end:
                active += 1
                used += gpus
        for start, end, every in self._stalls(queue):
            if start <= t < end:
                pending += int((t - start) // every) + 1
        ledger = self.ledger(queue, t)
        wait_buckets, wait_sum, admitted = ledger.admissions.at(t)
        exec_buckets, exec_sum, executed = ledger.executions.at(t)
        return QueueStatus(
            queue=queue,
            pending=pending,
            admitted_active=active,
            admitted_total=admitted,
            wait_buckets=wait_buckets,
            wait_sum=wait_sum,
            execution_buckets=exec_buckets,
            execution_sum=exec_sum,
            execution_count=executed,
            evicted_total=bisect.bisect_right(ledger.evictions, t),
            nominal_gpus=nominal,
            used_gpus=used,
        )
