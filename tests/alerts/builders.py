"""Plain-data builders for rule tests: series of points, evaluation data, and findings of one rule."""

from __future__ import annotations

from typing import Any

from alerts.lifecycle import Finding, finding_for
from alerts.rules import REGISTRY, settings_for
from alerts.rules.data import Assignment, EvaluationData, GpuPoint, IbPoint

T0 = 1_800_000_000.0  # a round unix time, in 2027
STEP = 30.0
GAP = 90.0


def data(now: float, **fields: Any) -> EvaluationData:
    """Evaluation data with every family covered up to ``now``."""
    as_of = {family: now for family in ("gpu", "ib", "kueue", "runs", "checkpoints")}
    return EvaluationData(now=now, as_of=as_of, max_gap=GAP, step=STEP, **fields)


def gpu_series(node: str, gpu: int, start: float, end: float, **values: Any) -> list[GpuPoint]:
    """A GPU's points every STEP from start to end inclusive; values may be callables of ts."""
    base = {"util": 99.0, "tensor": 0.45, "sm": 0.6, "power": 620.0, **values}
    points = []
    ts = start
    while ts <= end:
        row = {k: (v(ts) if callable(v) else v) for k, v in base.items()}
        points.append(GpuPoint(node, gpu, ts, **row))
        ts += STEP
    return points


def ib_series(node: str, device: str, start: float, end: float, **values: Any) -> list[IbPoint]:
    """A port's points every STEP; values may be callables of ts."""
    base = {
        "tx_bytes": 20e9,
        "rx_bytes": 20e9,
        "xmit_wait": 1000.0,
        "state": 4,
        "saturated": 0,
        "rate": 50e9,  # NDR, bytes/s
        **values,
    }
    points = []
    ts = start
    while ts <= end:
        row = {k: (v(ts) if callable(v) else v) for k, v in base.items()}
        points.append(IbPoint(node, device, 1, ts, **row))
        ts += STEP
    return points


def run_on(nodes: list[str], start: float, end: float, run: str = "llama") -> list[Assignment]:
    """One pod of ``run`` on each node for [start, end]."""
    return [
        Assignment(node, "train", f"{run}-{i}", run, start, end) for i, node in enumerate(nodes)
    ]


def findings(rule_id: str, evaluation: EvaluationData, **overrides: Any) -> list[Finding]:
    """The findings of one rule (overrides: for_seconds, keep_firing_for_seconds, params)."""
    rule = REGISTRY[rule_id]
    rs = settings_for(rule_id, **overrides)
    found = []
    for signal in rule.signals(evaluation, rs):
        finding = finding_for(
            rule_id, signal, rule.as_of(evaluation), rs.for_seconds, rs.keep_firing_for_seconds
        )
        if finding is not None:
            found.append(finding)
    evaluation.current[rule_id] = found
    return found
