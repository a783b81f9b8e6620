"""JSON endpoints: ``/api/v1/runs``, ``/api/v1/runs/<ns>/<name>``, ``/api/v1/queues``."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from runs import selectors
from runs.advisor import Advice
from runs.goodput import CrashLoss, Goodput, QueueDay
from runs.selectors import QueueHistory, RunEvent, RunFacts, checkpoint_json

from ..api.serialize import bad_request, iso
from . import report
from .forms import QueuesForm, RunFilterForm, first_error


def run_url(run: RunFacts) -> str:
    """The run's page, names percent-encoded."""
    return f"/runs/{quote(run.job.namespace, safe='')}/{quote(run.job.name, safe='')}/"


def goodput_json(goodput: Goodput | None) -> dict[str, Any]:
    """ETTR and lost time by kind."""
    if goodput is None:
        return {"ettr": None, "lost_seconds": None}
    return {
        "wall_seconds": goodput.wall_seconds,
        "productive_seconds": goodput.productive_seconds,
        "ettr": goodput.ettr,
        "lost_seconds": goodput.lost_seconds,
        "lost": {
            "redo_seconds": goodput.redo_seconds,
            "restart_seconds": goodput.restart_seconds,
            "checkpoint_seconds": goodput.checkpoint_seconds,
        },
    }


def run_summary_json(run: RunFacts) -> dict[str, Any]:
    """A run as listed: identity, queue, state, lifetime, size, restarts, evictions, goodput."""
    job = run.job
    evictions = run.evictions
    return {
        "namespace": job.namespace,
        "name": job.name,
        "url": run_url(run),
        "local_queue": job.local_queue,
        "cluster_queue": job.cluster_queue.name if job.cluster_queue else None,
        "state": job.state,
        "start": iso(run.start),
        "end": iso(run.end),
        "gpus": run.gpus,
        "nodes": run.nodes,
        "restarts": run.restarts,
        "evictions": len(evictions),
        "last_eviction_reason": evictions[-1].detail if evictions else None,
        "checkpoints": len(run.checkpoints),
        "last_checkpoint": iso(run.checkpoints[-1].ts) if run.checkpoints else None,
        **goodput_json(run.goodput),
    }


def crash_json(loss: CrashLoss) -> dict[str, Any]:
    """One interruption and what it cost."""
    checkpoint = loss.since_checkpoint
    return {
        "time": iso(loss.interruption.ts),
        "kind": loss.interruption.kind,
        "detail": loss.interruption.detail,
        "lost_work_since": iso(loss.since),
        "lost_work_since_step": checkpoint.step if checkpoint else None,
        "lost_work_seconds": loss.lost_work_seconds,
        "restart_seconds": loss.restart_seconds,
        "resumed_at": iso(loss.resumed_at) if loss.restart_seconds else None,
    }


def advice_json(advice: Advice) -> dict[str, Any]:
    """The advisor's figures (seconds and fractions) and its sentence."""
    return {
        "similar_runs": advice.similar_runs,
        "crashes": advice.crashes,
        "exposure_seconds": advice.exposure_seconds,
        "mtbf_seconds": advice.mtbf_seconds,
        "checkpoint_seconds": advice.checkpoint_seconds,
        "current_interval_seconds": advice.current_interval_seconds,
        "young_interval_seconds": advice.young_seconds,
        "daly_interval_seconds": advice.daly_seconds,
        "current_waste": advice.current_waste,
        "optimal_waste": advice.optimal_waste,
        "summary": advice.summary,
    }


def event_json(event: RunEvent) -> dict[str, Any]:
    """A run event."""
    return {"time": iso(event.ts), "kind": event.kind, "pod": event.pod, "detail": event.detail}


@require_GET
def runs(request: HttpRequest) -> JsonResponse:
    """Runs matching the filters, newest first."""
    form = RunFilterForm(request.GET)
    if not form.is_valid():
        return bad_request(*first_error(form))
    start, end = form.span()
    data = form.cleaned_data
    jobs = selectors.filter_jobs(
        queue=data["queue"], state=data["state"], node=data["node"], since=start, until=end
    )
    found = selectors.list_runs(jobs)
    return JsonResponse({"start": iso(start), "end": iso(end), "count": len(found),
                         "runs": [run_summary_json(run) for run in found]})  # fmt: skip


@require_GET
def run_detail(request: HttpRequest, namespace: str, name: str) -> JsonResponse:
    """One run: holdings, events, checkpoints, crashes with lost work, ETTR, advisor figures."""
    found = report.run_report(namespace, name, with_series=False)
    if found is None:
        return JsonResponse(
            {"error": "not_found", "detail": f"no run {namespace}/{name}"}, status=404
        )
    run = found.run
    body = run_summary_json(run)
    body.update({
        "holdings": [{"node": h.node, "start": iso(h.start), "end": iso(h.end)} for h in run.holdings],
        "events": [event_json(e) for e in run.events],
        "checkpoints": [checkpoint_json(c) for c in found.checkpoints],
        "crashes": [crash_json(loss) for loss in run.goodput.crashes] if run.goodput else [],
        "advisor": advice_json(found.advice),
    })  # fmt: skip
    return JsonResponse(body)


def queue_json(history: QueueHistory) -> dict[str, Any]:
    """A ClusterQueue's latest figures, window totals and series."""
    return {
        "name": history.queue.name,
        "cohort": history.queue.cohort,
        "stalled": history.stalled,
        "latest": {
            series: history.latest(series)
            for series in ("pending_active", "pending_inadmissible", "admitted_active", "wait_p50", "wait_p95")
        },
        "admitted": sum(v for v in history.admitted if v is not None),
        "evictions": history.evictions,
        "quota": [{**row, "ts": iso(row["ts"])} for row in history.quota],  # type: ignore[arg-type]
        "series": {
            "times": [iso(t) for t in history.times],
            **{s: getattr(history, s) for s in ("pending_active", "pending_inadmissible", "admitted_active",
                                                  "admitted", "wait_p50", "wait_p95")},
        },
    }  # fmt: skip


def queue_day_json(row: QueueDay) -> dict[str, Any]:
    """GPU-weighted goodput of one queue on one day."""
    return {
        "queue": row.queue,
        "day": row.day.isoformat(),
        "ettr": row.ettr,
        "wall_gpu_seconds": row.wall_gpu_seconds,
        "productive_gpu_seconds": row.productive_gpu_seconds,
        "lost_gpu_seconds": {str(kind): value for kind, value in row.lost_gpu_seconds.items()},
    }


@require_GET
def queues(request: HttpRequest) -> JsonResponse:
    """Every ClusterQueue's history, its runs (the Gantt) and goodput per queue per day."""
    form = QueuesForm(request.GET)
    if not form.is_valid():
        return bad_request(*first_error(form))
    found = report.queues_report(*form.span())
    return JsonResponse({
        "start": iso(found.start), "end": iso(found.end),
        "queues": [queue_json(h) for h in found.histories],
        "runs": [{"queue": report.queue_name(r), **run_summary_json(r)} for r in found.runs],
        "goodput": [queue_day_json(row) for row in found.goodput],
    })  # fmt: skip
