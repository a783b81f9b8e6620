"""Kueue rules: a ClusterQueue with pending workloads and no admission for a while."""

from __future__ import annotations

from collections.abc import Iterator
from operator import attrgetter

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, Signal
from .series import duration, group, streak_start


@register
class KueueQueueStalled(BaseRule):
    """A ClusterQueue has pending workloads but admitted none for ``for`` (15 min): GPUs idle.

    At each step: pending (active, plus inadmissible if ``include_inadmissible``)
    ≥ ``min_pending`` and no admission during the step. The rule's ``for`` is the
    stall duration.
    """

    id = "kueue_queue_stalled"
    needs = ("kueue",)
    family = Family.KUEUE
    scope = ("cluster_queue",)
    severity = "warning"
    for_seconds = 900
    params = (
        Param("min_pending", float, 1.0, "pending workloads at or above which a queue can stall"),
        Param(
            "include_inadmissible", bool, False, "count inadmissible workloads (quota) as pending"
        ),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        for queue, points in group(data.kueue, attrgetter("cluster_queue")):
            pending = [
                (pt.pending_active or 0.0)
                + ((pt.pending_inadmissible or 0.0) if p["include_inadmissible"] else 0.0)
                for pt in points
            ]
            truth = [
                n >= p["min_pending"] and not (pt.admitted or 0.0)
                for n, pt in zip(pending, points, strict=True)
            ]
            if True not in truth:
                continue
            times = [pt.ts for pt in points]

            def describe(
                i: int,
                queue: str = queue,
                pending: list = pending,
                times: list = times,
                truth: list = truth,
            ) -> Detail:
                stalled = times[i] - streak_start(times, truth, i, data.max_gap)
                summary = f"ClusterQueue {queue}: {pending[i]:.0f} pending, no admission for {duration(stalled)}"
                return Detail(
                    pending[i], summary, {"pending": pending[i], "stalled_seconds": stalled}
                )

            yield Signal({"cluster_queue": queue}, times, truth, data.max_gap, describe)
