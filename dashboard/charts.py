"""Pure Plotly figure builders: data in, figure dict out (drawn by plotly.js in the page).

Label values (node, port, pod names) are untrusted and Plotly renders a subset
of HTML in trace names, hover labels and tick labels, so every string that came
from a label goes through ``label()`` first; plotly.js turns the entities back
into the characters on screen, as text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

Figure = dict[str, Any]
POOL_COLOURS = {"training": "#4aa3ff", "inference": "#bc8cff", "unknown": "#8b98a5"}
THEME: dict[str, Any] = {
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "font": {"color": "#e6edf3", "size": 12},
    "margin": {"l": 64, "r": 16, "t": 36, "b": 48},
    "legend": {"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
    "hovermode": "x unified",
}
# SI prefixes (G, not Plotly's default "B" for billions, which reads as bytes).
AXIS = {"gridcolor": "#2b3642", "zerolinecolor": "#2b3642", "exponentformat": "SI"}
#: Bytes/s axes: SI-prefixed ticks with the unit, so 2.5e11 reads "250 GB/s" ("250GB/s").
BYTES_PER_SECOND = {"ticksuffix": "B/s", "rangemode": "tozero"}


ENTITIES = str.maketrans({"&": "&#38;", "<": "&#60;", ">": "&#62;", '"': "&#34;", "'": "&#39;"})


def label(value: object) -> str:
    """An untrusted label value made safe for Plotly's HTML-ish text rendering.

    Numeric entities, because plotly.js decodes those (and not ``&quot;``) back to characters.
    """
    return str(value).translate(ENTITIES)


def _finish(fig: go.Figure, height: int) -> Figure:
    fig.update_layout(height=height, **THEME)
    fig.update_xaxes(**AXIS)
    fig.update_yaxes(**AXIS)
    return fig.to_plotly_json()


# Plotly validates and deep-copies every point of every trace (~0.25 s for one node
# figure of 24 traces × 360 points), so the figures below take their layout from
# Plotly once per shape (cached) and add the traces as plain dicts, which is what
# ``to_plotly_json`` would answer for them.
@lru_cache(maxsize=16)
def _layout(shape: str) -> Figure:
    """The layout (axes, titles, theme) of one figure shape, built by Plotly once."""
    fig = LAYOUTS[shape]()
    return _finish(fig, HEIGHTS[shape])["layout"]


def build_layouts() -> None:
    """Build every shape's layout now: a web worker's first page would pay ~0.2 s per shape."""
    for shape in LAYOUTS:
        _layout(shape)


def _figure(shape: str, traces: list[Figure], at: datetime | None = None) -> Figure:
    """A figure of ``shape`` with ``traces`` and, when ``at`` is given, a dotted time marker per row."""
    layout = dict(_layout(shape))  # shallow: the cached nested dicts are never mutated
    if at is not None:
        rows = sorted({trace.get("yaxis", "y") for trace in traces}, key=lambda y: (len(y), y))
        layout["shapes"] = [
            {"line": {"color": "#d29922", "dash": "dot", "width": 1}, "type": "line", "x0": at,
             "x1": at, "xref": f"x{y[1:]}", "y0": 0, "y1": 1, "yref": f"{y} domain"}
            for y in rows
        ]  # fmt: skip
    return {"data": traces, "layout": layout}


def _scatter(x: Sequence[Any], y: Sequence[Any], name: str, row: int = 1, **style: Any) -> Figure:
    """One scatter trace on subplot ``row`` (axes x/y, x2/y2, ...)."""
    suffix = "" if row == 1 else str(row)
    return {"type": "scatter", "x": x, "y": y, "name": name, "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}", **style}  # fmt: skip


def _utilization_layout() -> go.Figure:
    fig = go.Figure()
    fig.update_yaxes(title_text="utilization (%)", range=[0, 100])
    fig.update_xaxes(title_text="time (UTC)")
    return fig


def utilization(
    times: Sequence[datetime], series: dict[str, tuple[list[float | None], list[float | None]]]
) -> Figure:
    """Reported (GPU util) vs real (tensor active) utilization: cluster-wide, then per pool."""
    traces = []
    for name, (util, tensor) in series.items():
        cluster = name == "cluster"
        colour = "#e6edf3" if cluster else POOL_COLOURS.get(name, "#8b98a5")
        width = 2.5 if cluster else 1.2
        traces.append(_scatter(times, util, f"{label(name)} util (reported)",
                               line={"color": colour, "width": width}))  # fmt: skip
        traces.append(_scatter(times, tensor, f"{label(name)} tensor active (real)",
                               line={"color": colour, "width": width, "dash": "dot"}))  # fmt: skip
    return _figure("utilization", traces)


def _pools_layout() -> go.Figure:
    fig = go.Figure()
    fig.update_yaxes(title_text="nodes", rangemode="tozero")
    fig.update_xaxes(title_text="time (UTC)")
    return fig


def pools(times: Sequence[datetime], counts: dict[str, list[int]]) -> Figure:
    """Nodes per pool over time (step lines), so capacity flips show; None (no data) is a gap."""
    traces = [
        _scatter(
            times,
            values,
            label(pool),
            connectgaps=False,
            line={"shape": "hv", "color": POOL_COLOURS.get(pool)},
        )  # fmt: skip
        for pool, values in counts.items()
    ]
    return _figure("pools", traces)


def _per_device(
    series: dict[str, dict[str, list]], rows: Iterable[tuple[int, str]], prefix: str
) -> list[Figure]:
    traces = []
    for index, (device, columns) in enumerate(sorted(series.items())):
        for row, key in rows:
            traces.append(_scatter(
                columns["times"], columns[key], f"{prefix}{label(device)}", row,
                legendgroup=label(device), showlegend=row == 1, line={"width": 1.2},
                marker={"color": f"hsl({index * 45 % 360},70%,60%)"},
            ))  # fmt: skip
    return traces


def _node_gpus_layout() -> go.Figure:
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    fig.update_yaxes(title_text="util (%)", range=[0, 105], row=1, col=1)
    fig.update_yaxes(title_text="tensor active (%)", range=[0, 105], row=2, col=1)
    fig.update_yaxes(title_text="power (W)", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=3, col=1)
    return fig


def node_gpus(
    series: dict[str, dict[str, list]],
    xids: Sequence[tuple[datetime, int, int, str]],
    at: datetime | None,
) -> Figure:
    """Per-GPU util vs tensor active vs power, XID events as markers: drift made visible."""
    traces = _per_device(series, [(1, "util"), (2, "tensor"), (3, "power")], "GPU ")
    if xids:
        traces.append(_scatter(
            [x[0] for x in xids], [100] * len(xids), "XID", mode="markers",
            marker={"symbol": "x", "size": 11, "color": "#f85149"},
            text=[label(f"GPU {gpu}: XID {code} {message}") for _, gpu, code, message in xids],
            hovertemplate="%{text}<extra></extra>",
        ))  # fmt: skip
    return _figure("node_gpus", traces, at)


def _node_ports_layout() -> go.Figure:
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    fig.update_yaxes(title_text="tx+rx", row=1, col=1, **BYTES_PER_SECOND)
    fig.update_yaxes(title_text="xmit_wait (ticks/s)", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title_text="errors (per step)", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=3, col=1)
    return fig


def node_ports(series: dict[str, dict[str, list]], at: datetime | None) -> Figure:
    """Per-port IB throughput (tx+rx), xmit_wait and error increases."""
    traces = _per_device(series, [(1, "throughput"), (2, "xmit_wait"), (3, "errors")], "")
    return _figure("node_ports", traces, at)


def _node_nvlink_layout() -> go.Figure:
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    fig.update_yaxes(title_text="NVLink", row=1, col=1, **BYTES_PER_SECOND)
    fig.update_yaxes(title_text="errors (per step)", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    return fig


def node_nvlink(series: dict[str, dict[str, list]], at: datetime | None) -> Figure:
    """Per-GPU NVLink bandwidth and error increases."""
    traces = _per_device(series, [(1, "nvlink_bw"), (2, "nvlink_errors")], "GPU ")
    return _figure("node_nvlink", traces, at)


LAYOUTS: dict[str, Callable[[], go.Figure]] = {
    "utilization": _utilization_layout,
    "pools": _pools_layout,
    "node_gpus": _node_gpus_layout,
    "node_ports": _node_ports_layout,
    "node_nvlink": _node_nvlink_layout,
}
HEIGHTS = {
    "utilization": 320,
    "pools": 260,
    "node_gpus": 620,
    "node_ports": 560,
    "node_nvlink": 400,
}
