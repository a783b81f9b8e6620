"""Checkpoint rules: a running run that has not checkpointed for k × its usual interval."""

from __future__ import annotations

from collections.abc import Iterator

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, Signal
from .series import duration, intervals_signal, iso, median


@register
class CheckpointStale(BaseRule):
    """A running run has not checkpointed for ``interval_multiplier`` (3) × its median interval.

    The usual interval is the median of the last ``history`` (10) intervals; a
    run needs ``min_checkpoints`` (3) checkpoints before its cadence is known.
    Work since the last checkpoint is what a crash would waste.
    """

    id = "checkpoint_stale"
    needs = ("runs",)
    family = Family.CHECKPOINTS
    scope = ("namespace", "run")
    severity = "warning"
    params = (
        Param("interval_multiplier", float, 3.0, "k: stale after k × the median interval"),
        Param("min_checkpoints", int, 3, "checkpoints needed before the cadence is known"),
        Param("history", int, 10, "intervals the median is taken over"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        as_of = data.as_of_family(self.family)
        for run in data.runs:
            marks = run.checkpoints
            if not run.running or len(marks) < p["min_checkpoints"]:
                continue
            intervals: list[tuple[float, float | None]] = []
            for i in range(p["min_checkpoints"] - 1, len(marks)):
                gaps = [b - a for a, b in zip(marks[: i + 1], marks[1 : i + 1], strict=False)][
                    -p["history"] :
                ]
                allowed = p["interval_multiplier"] * median(gaps)
                end = marks[i + 1] if i + 1 < len(marks) else None
                if (end if end is not None else as_of) - marks[i] > allowed:
                    intervals.append((marks[i] + allowed, end))
            if not intervals:
                continue
            usual = median([b - a for a, b in zip(marks, marks[1:], strict=False)][-p["history"] :])

            def describe(i: int, run: object = run, usual: float = usual) -> Detail:
                last = run.checkpoints[-1]  # type: ignore[attr-defined]
                since = as_of - last
                summary = (
                    f"Run {run.namespace}/{run.run}: no checkpoint for {duration(since)} "  # type: ignore[attr-defined]
                    f"(usually every {duration(usual)})"
                )
                return Detail(
                    since, summary, {"last_checkpoint": iso(last), "median_interval_seconds": usual}
                )

            yield intervals_signal(
                {"namespace": run.namespace, "run": run.run}, intervals, describe
            )
