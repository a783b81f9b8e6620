"""What the run and queue pages show, assembled from the queries and the pure functions.

Shared by the HTML views and the JSON API so both always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from core import clock
from ingest.models import Checkpoint

from . import queries, queue_queries
from .advisor import Advice, advise, is_similar
from .goodput import QueueDay, by_queue_day
from .overlay import AlertSpan, alerts_on_nodes
from .queries import RunFacts
from .queue_queries import QueueHistory
from .series import SeriesPoint, gpu_series, ib_series

#: Runs that held nodes within this long before now form the MTBF population.
ADVISOR_LOOKBACK = timedelta(days=30)
MAX_GANTT_RUNS = 300


@dataclass
class RunReport:
    """A run with its checkpoints (full rows), series, alerts and advice."""

    run: RunFacts
    checkpoints: list[Checkpoint]
    advice: Advice
    gpu: dict[str, list[SeriesPoint]] | None = None
    ib: list[SeriesPoint] | None = None
    alerts: list[AlertSpan] | None = None


def advice_for(run: RunFacts, now: datetime | None = None) -> Advice:
    """The checkpoint advisor's figures for a run, MTBF from runs of similar size."""
    population = queries.failure_population((now or clock.now()) - ADVISOR_LOOKBACK)
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


def run_report(namespace: str, name: str, *, with_series: bool) -> RunReport | None:
    """Everything about one run; the time series and alerts only when a page draws them."""
    run = queries.get_run(namespace, name)
    if run is None:
        return None
    report = RunReport(
        run=run,
        checkpoints=list(Checkpoint.objects.filter(job=run.job).order_by("ts")),
        advice=advice_for(run),
    )
    if with_series:
        report.gpu = gpu_series(run.holdings, run.start, run.end)
        report.ib = ib_series(run.holdings, run.start, run.end)
        report.alerts = alerts_on_nodes(run.nodes, run.start, run.end)
    return report


@dataclass
class QueuesReport:
    """The queues page: per-queue history, the runs for the Gantt, goodput per queue per day."""

    start: datetime
    end: datetime
    histories: list[QueueHistory]
    runs: list[RunFacts]
    goodput: list[QueueDay]


def queue_name(run: RunFacts) -> str:
    """The ClusterQueue of a run, else its LocalQueue."""
    return run.job.cluster_queue.name if run.job.cluster_queue else (run.job.local_queue or "")


def queues_report(start: datetime, end: datetime) -> QueuesReport:
    """Kueue history, runs and daily goodput for ``[start, end]``."""
    jobs = queries.filter_jobs(since=start, until=end).exclude(cluster_queue=None, local_queue="")
    runs = queries.list_runs(jobs, limit=MAX_GANTT_RUNS)
    goodput = by_queue_day(
        ((queue_name(r), r.gpus, r.goodput) for r in runs if r.goodput is not None), start, end
    )
    return QueuesReport(start, end, queue_queries.queue_histories(start, end), runs, goodput)
