"""Checkpoints from the ``training_last_checkpoint_*`` gauges (namespace, job_name).

The timestamp gauge holds the unix time of the job's last checkpoint: every
distinct value seen is one checkpoint (``ts`` = the value, not the scrape time),
with the step and duration read at the same evaluation step. Unique per (job,
step), so re-ingesting a window adds nothing. Jobs are created when missing; both are
written through ``runs.store``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runs import store

from .. import queries
from ..models import Family
from ..prometheus import PrometheusClient, Series
from ..stepseries import to_datetime
from .base import Batch, Source, StoreResult, Window
from .rangefetch import fetch, labelled, promql

JobKey = tuple[str, str]


@dataclass(frozen=True)
class GaugeCheckpoint:
    """One checkpoint read from the gauges."""

    job: JobKey
    ts: float
    step: int
    duration: float | None


def checkpoints_from_gauges(
    stamps: Mapping[JobKey, Series],
    steps: Mapping[JobKey, Series],
    durations: Mapping[JobKey, Series],
) -> tuple[list[GaugeCheckpoint], int]:
    """Each distinct checkpoint time of each job, with its step; (checkpoints, points skipped)."""
    found: list[GaugeCheckpoint] = []
    skipped = 0
    for job, series in stamps.items():
        step_at = dict(steps[job].points) if job in steps else {}
        duration_at = dict(durations[job].points) if job in durations else {}
        last_value: float | None = None
        for ts, value in series.points:
            if value == last_value:
                continue
            last_value = value
            if value <= 0 or ts not in step_at:  # never checkpointed / no step to key it by
                skipped += 1
                continue
            found.append(GaugeCheckpoint(job, value, int(step_at[ts]), duration_at.get(ts)))
    return found, skipped


class CheckpointSource(Source):
    """Checkpoint rows (source "prometheus") from the checkpoint gauges."""

    family = Family.CHECKPOINTS

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Fetch the three gauges over the window (baseline included) and pair them."""
        batch = Batch(self.family, window)

        def query(name: str) -> dict[JobKey, Series]:
            found = fetch(client, promql(self.family, queries.CHECKPOINTS, name), window, batch)
            return {
                (k[0], k[1]): s for k, s in labelled(found, "namespace", "job_name", batch=batch)
            }

        stamps = query("timestamp")
        checkpoints, skipped = checkpoints_from_gauges(stamps, query("step"), query("duration"))
        batch.skipped += skipped
        seen = {job: (s.points[0][0], s.points[-1][0]) for job, s in stamps.items()}
        batch.payload = (checkpoints, seen)
        return batch

    def store(self, batch: Batch) -> StoreResult:
        """Create missing jobs, then insert checkpoints not yet known for (job, step)."""
        checkpoints, seen = batch.payload
        job_ids = store.ensure_jobs(
            {
                (ns[:253], name[:253]): (to_datetime(first), to_datetime(last))
                for (ns, name), (first, last) in seen.items()
            }
        )
        written = store.insert_gauge_checkpoints(
            [(job_ids[(c.job[0][:253], c.job[1][:253])], c.step, to_datetime(c.ts), c.duration)
             for c in checkpoints]
        )  # fmt: skip
        return StoreResult(rows=written)
