"""Pure Plotly figure builders: data in, figure dict out (drawn by plotly.js in the page).

Label values (node, port, pod names) are untrusted and Plotly renders a subset
of HTML in trace names, hover labels and tick labels, so every string that came
from a label goes through ``label()`` first; plotly.js turns the entities back
into the characters on screen, as text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
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


def _mark_time(fig: go.Figure, at: datetime | None) -> None:
    if at is not None:
        fig.add_vline(x=at, line={"color": "#d29922", "dash": "dot", "width": 1})


def utilization(
    times: Sequence[datetime], series: dict[str, tuple[list[float | None], list[float | None]]]
) -> Figure:
    """Reported (GPU util) vs real (tensor active) utilization: cluster-wide, then per pool."""
    fig = go.Figure()
    for name, (util, tensor) in series.items():
        cluster = name == "cluster"
        colour = "#e6edf3" if cluster else POOL_COLOURS.get(name, "#8b98a5")
        width = 2.5 if cluster else 1.2
        fig.add_scatter(x=times, y=util, name=f"{label(name)} util (reported)",
                        line={"color": colour, "width": width})  # fmt: skip
        fig.add_scatter(x=times, y=tensor, name=f"{label(name)} tensor active (real)",
                        line={"color": colour, "width": width, "dash": "dot"})  # fmt: skip
    fig.update_yaxes(title_text="utilization (%)", range=[0, 100])
    fig.update_xaxes(title_text="time (UTC)")
    return _finish(fig, 320)


def pools(times: Sequence[datetime], counts: dict[str, list[int]]) -> Figure:
    """Nodes per pool over time (step lines), so capacity flips show."""
    fig = go.Figure()
    for pool, values in counts.items():
        fig.add_scatter(
            x=times,
            y=values,
            name=label(pool),
            line={"shape": "hv", "color": POOL_COLOURS.get(pool)},
        )
    fig.update_yaxes(title_text="nodes", rangemode="tozero")
    fig.update_xaxes(title_text="time (UTC)")
    return _finish(fig, 260)


def _per_device(
    fig: go.Figure, series: dict[str, dict[str, list]], rows: Iterable[tuple[int, str]], prefix: str
) -> None:
    for index, (device, columns) in enumerate(sorted(series.items())):
        for row, key in rows:
            fig.add_scatter(
                x=columns["times"], y=columns[key], name=f"{prefix}{label(device)}", row=row, col=1,
                legendgroup=label(device), showlegend=row == 1, line={"width": 1.2},
                marker={"color": f"hsl({index * 45 % 360},70%,60%)"},
            )  # fmt: skip


def node_gpus(
    series: dict[str, dict[str, list]],
    xids: Sequence[tuple[datetime, int, int, str]],
    at: datetime | None,
) -> Figure:
    """Per-GPU util vs tensor active vs power, XID events as markers: drift made visible."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    _per_device(fig, series, [(1, "util"), (2, "tensor"), (3, "power")], "GPU ")
    if xids:
        fig.add_scatter(
            x=[x[0] for x in xids], y=[100] * len(xids), mode="markers", name="XID", row=1, col=1,
            marker={"symbol": "x", "size": 11, "color": "#f85149"},
            text=[label(f"GPU {gpu}: XID {code} {message}") for _, gpu, code, message in xids],
            hovertemplate="%{text}<extra></extra>",
        )  # fmt: skip
    fig.update_yaxes(title_text="util (%)", range=[0, 105], row=1, col=1)
    fig.update_yaxes(title_text="tensor active (%)", range=[0, 105], row=2, col=1)
    fig.update_yaxes(title_text="power (W)", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=3, col=1)
    _mark_time(fig, at)
    return _finish(fig, 620)


def node_ports(series: dict[str, dict[str, list]], at: datetime | None) -> Figure:
    """Per-port IB throughput (tx+rx), xmit_wait and error increases."""
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    _per_device(fig, series, [(1, "throughput"), (2, "xmit_wait"), (3, "errors")], "")
    fig.update_yaxes(title_text="tx+rx", row=1, col=1, **BYTES_PER_SECOND)
    fig.update_yaxes(title_text="xmit_wait (ticks/s)", rangemode="tozero", row=2, col=1)
    fig.update_yaxes(title_text="errors (per step)", rangemode="tozero", row=3, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=3, col=1)
    _mark_time(fig, at)
    return _finish(fig, 560)


def node_nvlink(series: dict[str, dict[str, list]], at: datetime | None) -> Figure:
    """Per-GPU NVLink bandwidth and error increases."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    _per_device(fig, series, [(1, "nvlink_bw"), (2, "nvlink_errors")], "GPU ")
    fig.update_yaxes(title_text="NVLink", row=1, col=1, **BYTES_PER_SECOND)
    fig.update_yaxes(title_text="errors (per step)", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="time (UTC)", row=2, col=1)
    _mark_time(fig, at)
    return _finish(fig, 400)
