"""Training runs over time: each gang slot runs a sequence of cycles (queue, admit, run, end).

Everything is a pure function of (seed, faults, time): a cycle's run is computed from hashes of
(seed, slot, cycle index) and the faults that touch it, so any instant can be evaluated directly.
Cycles are counted from the spec's epoch, not from the unix epoch: a seed lays out the same runs
around its epoch whatever the hour (fixtures place faults on runs without searching for a seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from simulator.faults import ActiveFault, FaultIndex, FaultKind
from simulator.rng import unit
from simulator.topology import Queue, Slot

if TYPE_CHECKING:
    from simulator.spec import ClusterSpec

DIP = 0.15  # activity while a checkpoint is being written
TEARDOWN = 300.0  # idle seconds between a run's end and the next cycle
SUCCEEDED, PREEMPTED, FAILED = "Succeeded", "Preempted", "Failed"


@dataclass(frozen=True)
class Checkpoint:
    """A completed checkpoint: when it finished, the step it saved, how long the write took."""

    timestamp: float
    step: int
    duration: float


@dataclass(frozen=True)
class Attempt:
    """One uninterrupted stretch of a run (a crash ends it; the restart begins the next)."""

    start: float
    end: float
    anchor: float
    step0: int
    prior: Checkpoint | None


@dataclass(frozen=True)
class Run:
    """One training run (a Kueue workload / a Job) in a slot's cycle."""

    slot: int
    cycle: int
    name: str
    queue: Queue
    nodes: tuple[str, ...]
    queued_at: float
    admitted_at: float
    end: float
    outcome: str
    period: float
    checkpoint_seconds: float
    steps_per_second: float
    tensor_level: float
    bandwidth: float
    power_busy: float
    attempts: tuple[Attempt, ...]
    crashes: tuple[float, ...]
    stalls: tuple[tuple[float, float], ...]

    def attempt_at(self, t: float) -> Attempt | None:
        """The attempt running at t, or None (queued, restarting after a crash, or over)."""
        for attempt in self.attempts:
            if attempt.start <= t < attempt.end:
                return attempt
        return None

    def _stalled(self, cp: float) -> tuple[float, float] | None:
        for stall in self.stalls:
            if stall[0] <= cp < stall[1]:
                return stall
        return None

    def in_dip(self, attempt: Attempt, t: float) -> bool:
        """True while a checkpoint write is in progress at t."""
        j = math.ceil((t - attempt.anchor) / self.period)
        cp = attempt.anchor + j * self.period
        if j < 1 or cp > attempt.end or cp - t >= self.checkpoint_seconds:
            return False
        return self._stalled(cp) is None

    def activity(self, t: float) -> float:
        """1 computing, DIP while checkpointing, 0 when not running."""
        attempt = self.attempt_at(t)
        if attempt is None:
            return 0.0
        return DIP if self.in_dip(attempt, t) else 1.0

    def _last_in(self, attempt: Attempt, t: float) -> Checkpoint | None:
        j = math.floor((min(t, attempt.end) - attempt.anchor) / self.period)
        while j >= 1:
            cp = attempt.anchor + j * self.period
            stall = self._stalled(cp)
            if stall is None:
                step = attempt.step0 + int((cp - attempt.anchor) * self.steps_per_second)
                return Checkpoint(cp, step, self.checkpoint_seconds)
            j = math.ceil((stall[0] - attempt.anchor) / self.period) - 1
        return None

    def last_checkpoint(self, t: float) -> Checkpoint | None:
        """The newest checkpoint completed by t (across attempts), or None."""
        for attempt in reversed(self.attempts):
            if attempt.start <= t:
                return self._last_in(attempt, t) or attempt.prior
        return None

    def step(self, t: float) -> int:
        """The training step at t (resets to the checkpoint's step after a crash)."""
        for attempt in reversed(self.attempts):
            if attempt.start <= t:
                until = min(t, attempt.end)
                return attempt.step0 + int((until - attempt.anchor) * self.steps_per_second)
        return 0

    def _dip_measure(self, attempt: Attempt, a: float, b: float) -> float:
        p, d = self.period, self.checkpoint_seconds

        def g(x: float) -> float:
            n, r = divmod(x - attempt.anchor, p)
            return n * d + max(0.0, r - (p - d))

        total = g(b) - g(a)
        for s, e in self.stalls:
            lo, hi = max(a, s), min(b, e)
            if hi > lo:
                total -= g(hi) - g(lo)
        return total

    def work(self, a: float, b: float) -> float:
        """Integral of activity over [a, b) (seconds of full-speed compute)."""
        total = 0.0
        for attempt in self.attempts:
            lo, hi = max(a, attempt.start), min(b, attempt.end)
            if hi > lo:
                total += (hi - lo) - (1.0 - DIP) * self._dip_measure(attempt, lo, hi)
        return total


def _run_faults(faults: FaultIndex, kind: str, name: str, slot: Slot) -> list[ActiveFault]:
    nodes = set(slot.nodes)
    return [
        f
        for f in faults.of_kind(kind)
        if f.run == name or (f.run is None and f.nodes and f.nodes & nodes)
    ]


class SlotSchedule:
    """The cycles of one slot, computed on demand and cached, with prefix integrals."""

    def __init__(
        self,
        slot: Slot,
        seed: int,
        faults: FaultIndex,
        hostile: str | None,
        spec: ClusterSpec | None = None,
    ) -> None:
        self.slot = slot
        self.bandwidth = spec.run_bandwidth if spec else None
        self.admission_gap = spec.admission_gap_seconds if spec else None
        self.seed = seed
        self.faults = faults
        self.hostile = hostile if slot.index == 0 else None
        self.length = 60.0 * round(60 * (3.0 + 5.0 * unit(seed, "cycle", slot.index)))
        origin = spec.epoch_seconds if spec else 0.0
        self.phase = origin + round(unit(seed, "phase", slot.index) * self.length)
        self._cycles: dict[int, Run | None] = {}
        self._base: int | None = None
        self._cum: list[tuple[float, float, float]] = []

    def index_at(self, t: float) -> int:
        """The cycle index covering t."""
        return math.floor((t - self.phase) / self.length)

    def bounds(self, k: int) -> tuple[float, float]:
        """Start and end of cycle k."""
        start = self.phase + k * self.length
        return start, start + self.length

    def run(self, k: int) -> Run | None:
        """The run of cycle k (None when the queue never admitted it in this cycle)."""
        if k not in self._cycles:
            self._cycles[k] = self._build(k)
        return self._cycles[k]

    def run_at(self, t: float) -> Run | None:
        """The run whose cycle covers t (it may still be queued or already over)."""
        return self.run(self.index_at(t))

    def _admission(self, k: int, queued: float, latest: float) -> float | None:
        gap = self.admission_gap
        if gap is None:
            gap = 60.0 + unit(self.seed, "gap", self.slot.index, k) ** 2 * 0.3 * self.length
        admit = queued + gap
        stalls = [f for f in self.faults.of_kind(FaultKind.KUEUE_STALL) if self._stalls_me(f)]
        moved = True
        while moved:
            moved = False
            for stall in stalls:
                if stall.covers(admit):
                    admit, moved = stall.end, True
        return admit if admit < latest else None

    def _stalls_me(self, fault: ActiveFault) -> bool:
        return fault.queue is None or fault.queue == self.slot.queue.cluster_queue

    def _name(self, k: int) -> str:
        if self.hostile:
            return f"{self.hostile}-{k % 10000:04d}"
        models = self.slot.queue.models
        model = models[int(unit(self.seed, "model", self.slot.index, k) * len(models))]
        return f"{model}-s{self.slot.index}-{k % 10000:04d}"

    def _build(self, k: int) -> Run | None:
        start, end = self.bounds(k)
        admit = self._admission(k, start, end - 1800.0)
        if admit is None:
            return None
        key = (self.seed, self.slot.index, k)
        u = unit(*key, "outcome")
        if u < 0.72:
            outcome, run_end = SUCCEEDED, end - TEARDOWN
        else:
            outcome = PREEMPTED if u < 0.86 else FAILED
            frac = 0.4 + 0.5 * unit(*key, "frac")
            run_end = admit + frac * (end - TEARDOWN - admit)
        name = self._name(k)
        run = Run(
            slot=self.slot.index,
            cycle=k,
            name=name,
            queue=self.slot.queue,
            nodes=self.slot.nodes,
            queued_at=start,
            admitted_at=admit,
            end=run_end,
            outcome=outcome,
            period=(300.0, 420.0, 600.0, 900.0)[int(unit(*key, "period") * 4)],
            checkpoint_seconds=30.0 + round(60 * unit(*key, "ckpt")),
            steps_per_second=0.2 + 0.8 * unit(*key, "sps"),
            tensor_level=0.45 + 0.25 * unit(*key, "tensor"),
            bandwidth=self.bandwidth or 12e9 + 18e9 * unit(*key, "bw"),
            power_busy=560.0 + 120.0 * unit(*key, "power"),
            attempts=(),
            crashes=(),
            stalls=tuple(
                (f.start, f.end)
                for f in _run_faults(self.faults, FaultKind.CHECKPOINT_STALL, name, self.slot)
            ),
        )
        return self._with_crashes(run)

    def _with_crashes(self, run: Run) -> Run:
        first = Attempt(run.admitted_at, run.end, run.admitted_at, 0, None)
        crash_faults = _run_faults(self.faults, FaultKind.RUN_CRASH, run.name, self.slot)
        attempts, crashes = [first], []
        for fault in sorted(crash_faults, key=lambda f: f.start):
            current = attempts[-1]
            when = self._crash_time(run, current, fault)
            if not current.start < when < current.end:
                continue
            last = run._last_in(current, when) or current.prior
            attempts[-1] = Attempt(
                current.start, when, current.anchor, current.step0, current.prior
            )
            crashes.append(when)
            restart = when + float(fault.params["restart_seconds"])
            if restart >= run.end:
                break
            step0 = last.step if last else current.step0
            attempts.append(Attempt(restart, run.end, restart, step0, last))
        return replace(run, attempts=tuple(attempts), crashes=tuple(crashes))

    def _crash_time(self, run: Run, attempt: Attempt, fault: ActiveFault) -> float:
        after = fault.params.get("after_checkpoint_seconds")
        if after is None:
            return fault.start
        last = run._last_in(attempt, fault.start)
        return (last.timestamp if last else attempt.start) + float(after)

    def cycle_integral(self, k: int, a: float, b: float) -> tuple[float, float, float]:
        """(work, bytes-per-port, extra joules) of cycle k's run over [a, b)."""
        run = self.run(k)
        if run is None:
            return (0.0, 0.0, 0.0)
        w = run.work(a, b)
        return (w, w * run.bandwidth, w * (run.power_busy - 70.0))

    def _ensure(self, k: int) -> None:
        if self._base is None or k < self._base:
            self._base, self._cum = k - 8, [(0.0, 0.0, 0.0)]
        while self._base + len(self._cum) - 1 < k:
            kk = self._base + len(self._cum) - 1
            w, b, e = self.cycle_integral(kk, *self.bounds(kk))
            cw, cb, ce = self._cum[-1]
            self._cum.append((cw + w, cb + b, ce + e))

    def cumulative(self, t: float) -> tuple[float, float, float]:
        """Prefix integral from an internal base to t (differences give integrals)."""
        k = self.index_at(t)
        self._ensure(k)
        assert self._base is not None
        cw, cb, ce = self._cum[k - self._base]
        w, b, e = self.cycle_integral(k, self.bounds(k)[0], t)
        return (cw + w, cb + b, ce + e)

    def integral(self, a: float, b: float) -> tuple[float, float, float]:
        """(work, bytes-per-port, extra joules) over [a, b)."""
        if b <= a:
            return (0.0, 0.0, 0.0)
        self._ensure(self.index_at(a))
        hi, lo = self.cumulative(b), self.cumulative(a)
        return (hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])
