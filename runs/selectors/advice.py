"""The checkpoint advisor's figures for a run: MTBF observed on runs of similar size."""

from __future__ import annotations

from datetime import datetime, timedelta

from core import clock

from ..advisor import Advice, advise, is_similar
from .runs import RunFacts, failure_population

#: Runs that held nodes within this long before now form the MTBF population.
ADVISOR_LOOKBACK = timedelta(days=30)


def advice_for(run: RunFacts, now: datetime | None = None) -> Advice:
    """The checkpoint advisor's figures for a run, MTBF from runs of similar size."""
    population = failure_population((now or clock.now()) - ADVISOR_LOOKBACK)
    similar = [
        (wall, failures) for gpus, wall, failures in population if is_similar(run.gpus, gpus)
    ]
    return advise(
        checkpoint_durations=[c.duration_seconds for c in run.checkpoints if c.duration_seconds],
        checkpoint_times=[c.ts for c in run.checkpoints],
        similar_runs=len(similar),
        exposure_seconds=sum(wall for wall, _ in similar),
        crashes=sum(failures for _, failures in similar),
    )
