"""What the run and queue pages show, assembled from ``runs.selectors`` and the alerts overlay.

Shared by the HTML views and the JSON API so both always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from runs import selectors
from runs.advisor import Advice
from runs.goodput import QueueDay, by_queue_day
from runs.selectors import Checkpoint, QueueHistory, RunFacts, SeriesPoint

from .overlay import AlertSpan, alerts_on_nodes

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


def run_report(namespace: str, name: str, *, with_series: bool) -> RunReport | None:
    """Everything about one run; the time series and alerts only when a page draws them."""
    run = selectors.get_run(namespace, name)
    if run is None:
        return None
    report = RunReport(
        run=run,
        checkpoints=selectors.run_checkpoints(run.job),
        advice=selectors.advice_for(run),
    )
    if with_series:
        report.gpu = selectors.gpu_series(run.holdings, run.start, run.end)
        report.ib = selectors.ib_series(run.holdings, run.start, run.end)
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
    jobs = selectors.filter_jobs(since=start, until=end).exclude(cluster_queue=None, local_queue="")
    runs = selectors.list_runs(jobs, limit=MAX_GANTT_RUNS)
    goodput = by_queue_day(
        ((queue_name(r), r.gpus, r.goodput) for r in runs if r.goodput is not None), start, end
    )
    return QueuesReport(start, end, selectors.queue_histories(start, end), runs, goodput)
