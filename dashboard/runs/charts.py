"""Pure Plotly figure builders for the runs and queues pages: data in, figure dict out.

Plotly renders a subset of HTML in hover text, trace names and tick labels; every string that came
from a label (pod, node, reason, path, alert summary) goes through ``label()`` first.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from runs.goodput import Goodput, LostKind, QueueDay
from runs.selectors import QueueHistory, RunFacts, SeriesPoint

from .overlay import AlertSpan

Figure = dict[str, Any]
THEME: dict[str, Any] = {
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"color": "#e6edf3", "size": 12},
    "margin": {"l": 64, "r": 16, "t": 28, "b": 40},
    # Above the plot: below it, a horizontal legend sat on the x axis' two-line date labels.
    "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
}
GRID = {"gridcolor": "#2b3642", "zerolinecolor": "#2b3642"}
STATE_COLOURS = {"running": "#4aa3ff", "succeeded": "#3fb950", "failed": "#f85149",
                 "pending": "#d29922", "unknown": "#8b98a5"}  # fmt: skip
LOST_COLOURS = {LostKind.REDO: "rgba(248,81,73,0.28)", LostKind.RESTART: "rgba(210,153,34,0.22)",
                LostKind.CHECKPOINT: "rgba(139,152,165,0.18)"}  # fmt: skip
EVENT_SYMBOLS = {"restart": "x", "failed": "x", "evicted": "triangle-down", "preempted": "triangle-down",
                 "started": "circle-open", "succeeded": "star", "node_lost": "x",
                 "node_shutdown": "triangle-down", "rejected": "triangle-down", "gated": "circle-open",
                 "pod_reason": "circle"}  # fmt: skip
LANES = {"alerts": 0, "events": 1, "checkpoints": 2}


def label(value: object) -> str:
    """An untrusted value made safe for Plotly's HTML-ish text rendering."""
    return html.escape(str(value), quote=True)


def _size(num_bytes: int | None) -> str:
    if num_bytes is None:
        return "size unknown"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if num_bytes < 1000 or unit == "TB":
            return f"{num_bytes:.0f} {unit}" if unit == "B" else f"{num_bytes:.1f} {unit}"
        num_bytes /= 1000  # type: ignore[assignment]
    return ""


def _line(points: Sequence[SeriesPoint], attr: str, name: str, yaxis: str, colour: str, scale: float = 1.0,
          dash: str = "solid") -> dict[str, Any]:  # fmt: skip
    values = [None if getattr(p, attr) is None else getattr(p, attr) * scale for p in points]
    return {"type": "scatter", "mode": "lines", "x": [p.ts for p in points], "y": values, "name": name,
            "yaxis": yaxis, "line": {"color": colour, "width": 1.5, "dash": dash}}  # fmt: skip


def _checkpoint_trace(checkpoints: Sequence[Any]) -> dict[str, Any]:
    text = [
        f"checkpoint step {c.step}<br>write {c.duration_seconds if c.duration_seconds is not None else '?'} s"
        f"<br>{_size(c.bytes)}<br>{label(c.path)}"
        for c in checkpoints
    ]
    return {"type": "scatter", "mode": "markers", "name": "checkpoints", "x": [c.ts for c in checkpoints],
            "y": [LANES["checkpoints"]] * len(checkpoints), "yaxis": "y3", "text": text,
            "hoverinfo": "text+x", "marker": {"symbol": "diamond", "size": 9, "color": "#3fb950"}}  # fmt: skip


def _event_traces(run: RunFacts) -> list[dict[str, Any]]:
    traces = []
    for kind in sorted({e.kind for e in run.events}):
        events = [e for e in run.events if e.kind == kind]
        text = [
            f"{label(e.get_kind_display())}<br>pod {label(e.pod)}<br>{label(e.detail)}"
            for e in events
        ]
        traces.append({"type": "scatter", "mode": "markers", "name": label(kind), "x": [e.ts for e in events],
                       "y": [LANES["events"]] * len(events), "yaxis": "y3", "text": text, "hoverinfo": "text+x",
                       "cliponaxis": False,  # the start event sits on the axis' first instant: not half-cut
                       "marker": {"symbol": EVENT_SYMBOLS.get(kind, "circle"), "size": 11,
                                  "color": "#f85149" if kind in ("restart", "failed", "node_lost") else "#d29922"}})  # fmt: skip
    return traces


def _alert_traces(alerts: Sequence[AlertSpan], end: datetime) -> list[dict[str, Any]]:
    traces = []
    for alert in alerts:
        colour = "#f85149" if alert.severity == "critical" else "#d29922"
        text = label(f"{alert.rule} on {alert.node}: {alert.summary}")
        traces.append({"type": "scatter", "mode": "lines+markers", "showlegend": False, "name": label(alert.rule),
                       "x": [alert.start, alert.end or end], "y": [LANES["alerts"]] * 2, "yaxis": "y3",
                       "text": [text, text], "hoverinfo": "text+x", "line": {"color": colour, "width": 6}})  # fmt: skip
    return traces


def _shapes(goodput: Goodput | None, run: RunFacts) -> list[dict[str, Any]]:
    shapes = []
    for interval in goodput.intervals if goodput else ():
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": interval.start, "x1": interval.end,
                       "y0": 0, "y1": 1, "fillcolor": LOST_COLOURS[interval.kind], "line": {"width": 0},
                       "layer": "below", "name": f"lost-{interval.kind}"})  # fmt: skip
    for event in run.interruptions:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": event.ts, "x1": event.ts, "y0": 0,
                       "y1": 1, "line": {"color": "#f85149", "width": 1, "dash": "dot"}})  # fmt: skip
    return shapes


def run_timeline(
    run: RunFacts, gpu: dict[str, list[SeriesPoint]], ib: list[SeriesPoint], alerts: Sequence[AlertSpan],
    checkpoints: Sequence[Any],
) -> Figure:  # fmt: skip
    """GPU util / tensor activity, IB throughput, checkpoints, events, alerts and shaded lost work."""
    data = [
        _line(gpu["util"], "median", "GPU util median %", "y", "#4aa3ff"),
        _line(gpu["util"], "worst", "GPU util worst %", "y", "#4aa3ff", dash="dot"),
        _line(gpu["tensor"], "median", "tensor active median %", "y", "#bc8cff", 100.0),
        _line(gpu["tensor"], "worst", "tensor active worst %", "y", "#bc8cff", 100.0, "dot"),
        _line(ib, "median", "IB Gbit/s median node", "y2", "#3fb950", 8e-9),
        _line(ib, "worst", "IB Gbit/s worst node", "y2", "#3fb950", 8e-9, "dot"),
        _checkpoint_trace(checkpoints),
        *_event_traces(run),
        *_alert_traces(alerts, run.end),
    ]
    layout = {
        **THEME, "height": 560, "hovermode": "closest", "shapes": _shapes(run.goodput, run),
        "margin": {**THEME["margin"], "l": 96},
        "xaxis": {**GRID, "type": "date", "range": [run.start, run.end], "anchor": "y3"},
        "yaxis": {**GRID, "domain": [0.5, 1.0], "title": {"text": "%"}, "range": [0, 105]},
        "yaxis2": {**GRID, "domain": [0.24, 0.46], "title": {"text": "Gbit/s"}},
        "yaxis3": {**GRID, "domain": [0.0, 0.2], "range": [-0.5, 2.5], "tickvals": list(LANES.values()),
                   "ticktext": list(LANES)},
    }  # fmt: skip
    return {"data": data, "layout": layout}


def queue_history(history: QueueHistory) -> Figure:
    """Pending (active / inadmissible), admitted and admission wait of one ClusterQueue."""
    x = history.times
    data = [
        {"type": "scatter", "mode": "lines", "x": x, "y": history.pending_active, "name": "pending active"},
        {"type": "scatter", "mode": "lines", "x": x, "y": history.pending_inadmissible, "name": "pending inadmissible"},
        {"type": "scatter", "mode": "lines", "x": x, "y": history.admitted_active, "name": "admitted (running)"},
        # Waits exist only in steps with an admission: markers, or a lone one is not drawn at all.
        {"type": "scatter", "mode": "lines+markers", "x": x, "y": history.wait_p50, "name": "wait p50 s",
         "yaxis": "y2", "line": {"dash": "dot"}, "marker": {"size": 5}},
        {"type": "scatter", "mode": "lines+markers", "x": x, "y": history.wait_p95, "name": "wait p95 s",
         "yaxis": "y2", "line": {"dash": "dot"}, "marker": {"size": 5}},
    ]  # fmt: skip
    # Both axes from zero: a flat series otherwise gets a range like 59.8-60.2 with repeated ticks.
    layout = {**THEME, "height": 280, "hovermode": "x unified", "xaxis": {**GRID, "type": "date"},
              "yaxis": {**GRID, "title": {"text": "workloads"}, "rangemode": "tozero"},
              "yaxis2": {**GRID, "overlaying": "y", "side": "right", "title": {"text": "s"},
                         "rangemode": "tozero", "automargin": True, "tickmode": "auto",
                         "showgrid": False}}  # fmt: skip
    return {"data": data, "layout": layout}


def evictions(table: dict[tuple[str, str], dict[str, float]]) -> Figure:
    """Evictions and preemptions per queue, stacked by (kind, reason)."""
    data = [
        {"type": "bar", "name": label(f"{kind}: {reason}"), "x": [label(q) for q in counts],
         "y": list(counts.values())}
        for (kind, reason), counts in sorted(table.items())
    ]  # fmt: skip
    return {
        "data": data,
        "layout": {**THEME, "height": 260, "barmode": "stack", "xaxis": GRID, "yaxis": GRID},
    }


def gantt(runs: Sequence[RunFacts]) -> Figure:
    """Runs per queue over time: one bar per run, labelled with its GPU count, coloured by state."""
    data = []
    for state, colour in STATE_COLOURS.items():
        chosen = [r for r in runs if r.job.state == state]
        if not chosen:
            continue
        rows = [label(f"{_queue(r)} · {r.job.namespace}/{r.job.name}") for r in chosen]
        data.append({
            "type": "bar", "orientation": "h", "name": state, "y": rows, "base": [r.start for r in chosen],
            "x": [max(1000.0, (r.end - r.start).total_seconds() * 1000) for r in chosen],
            "text": [f"{r.gpus} GPUs" for r in chosen], "textposition": "inside", "marker": {"color": colour},
            "hovertext": [f"{row}<br>{r.gpus} GPUs, {state}" for row, r in zip(rows, chosen, strict=True)],
            "hoverinfo": "text",
        })  # fmt: skip
    height = max(220, 22 * len(runs) + 80)
    layout = {**THEME, "height": height, "barmode": "overlay", "xaxis": {**GRID, "type": "date"},
              "yaxis": {**GRID, "autorange": "reversed", "automargin": True}}  # fmt: skip
    return {"data": data, "layout": layout}


def _queue(run: RunFacts) -> str:
    return run.job.cluster_queue.name if run.job.cluster_queue else (run.job.local_queue or "—")


def goodput_by_day(rows: Sequence[QueueDay]) -> Figure:
    """ETTR per queue per day (GPU-weighted)."""
    queues = sorted({r.queue for r in rows})
    data = [
        {"type": "bar", "name": label(queue), "x": [r.day.isoformat() for r in rows if r.queue == queue],
         "y": [None if r.ettr is None else round(100 * r.ettr, 2) for r in rows if r.queue == queue]}
        for queue in queues
    ]  # fmt: skip
    layout = {**THEME, "height": 260, "barmode": "group", "xaxis": {**GRID, "type": "category"},
              "yaxis": {**GRID, "title": {"text": "ETTR %"}, "range": [0, 100]}}  # fmt: skip
    return {"data": data, "layout": layout}
