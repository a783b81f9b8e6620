"""Runs and queues pages: thin views (form → report → charts)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from runs import selectors
from runs.advisor import format_duration, format_percent
from runs.selectors import RunFacts, evictions_by_reason

from . import charts, report
from .api import run_url
from .forms import QueuesForm, RunFilterForm


def run_list(request: HttpRequest) -> HttpResponse:
    """Runs with filters (queue, state, node, window)."""
    form = RunFilterForm(request.GET)
    runs = []
    if form.is_valid():
        start, end = form.span()
        data = form.cleaned_data
        jobs = selectors.filter_jobs(queue=data["queue"], state=data["state"], node=data["node"],
                                   since=start, until=end)  # fmt: skip
        runs = selectors.list_runs(jobs)
    rows = [
        {"run": run, "url": run_url(run), "queue": report.queue_name(run), "ettr": _percent(run),
         "wall": format_duration((run.end - run.start).total_seconds())}
        for run in runs
    ]  # fmt: skip
    return render(
        request, "dashboard/runs/list.html", {"title": "Runs", "form": form, "rows": rows}
    )


def _percent(run: RunFacts) -> str:
    ettr = run.goodput.ettr if run.goodput else None
    return "—" if ettr is None else format_percent(ettr)


def run_detail(request: HttpRequest, namespace: str, name: str) -> HttpResponse:
    """One run's timeline, goodput and checkpoint advice."""
    found = report.run_report(namespace, name, with_series=True)
    if found is None:
        raise Http404("no such run")
    run = found.run
    assert found.gpu is not None and found.ib is not None and found.alerts is not None
    figure = charts.run_timeline(run, found.gpu, found.ib, found.alerts, found.checkpoints)
    context = {
        "title": f"Run {run.job.namespace}/{run.job.name}",
        "report": found,
        "run": run,
        "goodput": run.goodput,
        "queue": report.queue_name(run),
        "timeline_figure": figure,
        "ettr": _percent(run),
        "lost": _lost_rows(run),
        "crashes": run.goodput.crashes if run.goodput else (),
    }
    return render(request, "dashboard/runs/detail.html", context)


def _lost_rows(run: RunFacts) -> list[tuple[str, str]]:
    goodput = run.goodput
    if goodput is None:
        return []
    return [
        ("Wall time", format_duration(goodput.wall_seconds)),
        ("Productive", format_duration(goodput.productive_seconds)),
        ("Work redone since last checkpoint", format_duration(goodput.redo_seconds)),
        ("Restart time", format_duration(goodput.restart_seconds)),
        ("Checkpoint writes", format_duration(goodput.checkpoint_seconds)),
    ]


def queue_list(request: HttpRequest) -> HttpResponse:
    """ClusterQueues over time, stalled first; the Gantt of runs; goodput per queue per day."""
    form = QueuesForm(request.GET)
    found = report.queues_report(*form.span()) if form.is_valid() else None
    figures = {}
    if found is not None:
        figures = {
            "queues": [
                (h, charts.queue_history(h), f"fig-queue-{i}")
                for i, h in enumerate(found.histories)
            ],
            "evictions": charts.evictions(table)
            if (table := evictions_by_reason(found.histories))
            else None,
            "gantt": charts.gantt(found.runs) if found.runs else None,
            "goodput": charts.goodput_by_day(found.goodput) if found.goodput else None,
        }
    return render(request, "dashboard/runs/queues.html",
                  {"title": "Queues", "form": form, "report": found, **figures})  # fmt: skip
