"""The runs app's read API: what ingest's rules, alerts and the dashboard may read about runs.

Runs with their holdings, events, checkpoints and goodput (``runs``), the queues page's Kueue
history (``queues``), a run's node series (``series``), the checkpoint advisor's figures
(``advice``), checkpoints (``checkpoints``) and what the alert rules read (``alerting``). The
SQL on ingest's tables these need is ingest's own (``ingest.run_series``); the models are
re-exported for type hints only.
"""

from __future__ import annotations

from ..models import Checkpoint, Job, RunEvent
from .advice import ADVISOR_LOOKBACK, advice_for
from .checkpoints import checkpoint_json, run_checkpoints
from .queues import QueueHistory, bucket_seconds, evictions_by_reason, queue_histories
from .runs import (
    DEFAULT_GPUS_PER_NODE,
    MAX_RUNS,
    Holding,
    RunFacts,
    failure_population,
    filter_jobs,
    get_run,
    list_runs,
    load_runs,
    peak_gpus,
    runs_on_node,
)
from .series import SeriesPoint, gpu_series, ib_series

#: A run's states (``Job.State``), for filters and forms.
JobState = Job.State

__all__ = [
    "ADVISOR_LOOKBACK",
    "DEFAULT_GPUS_PER_NODE",
    "MAX_RUNS",
    "Checkpoint",
    "Holding",
    "Job",
    "JobState",
    "QueueHistory",
    "RunEvent",
    "RunFacts",
    "SeriesPoint",
    "advice_for",
    "bucket_seconds",
    "checkpoint_json",
    "evictions_by_reason",
    "failure_population",
    "filter_jobs",
    "get_run",
    "gpu_series",
    "ib_series",
    "list_runs",
    "load_runs",
    "peak_gpus",
    "queue_histories",
    "run_checkpoints",
    "runs_on_node",
]
