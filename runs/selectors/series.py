"""A run's node time series: GPU util / tensor activity and IB throughput over its holdings.

The SQL on ingest's sample tables is ingest's (``ingest.run_series``); this module hands it the
spans the run held each node, so a node's previous or next tenant never leaks into the chart.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ingest import run_series
from ingest.run_series import SeriesPoint

from .runs import Holding

__all__ = ["SeriesPoint", "gpu_series", "ib_series"]


def _spans(holdings: Sequence[Holding]) -> list[run_series.NodeSpan]:
    return [(h.node_id, h.start, h.end) for h in holdings]


def gpu_series(
    holdings: Sequence[Holding], start: datetime, end: datetime
) -> dict[str, list[SeriesPoint]]:
    """``{"util": [...], "tensor": [...]}``: median and worst GPU of the run per timestamp."""
    return run_series.gpu_series(_spans(holdings), start, end)


def ib_series(holdings: Sequence[Holding], start: datetime, end: datetime) -> list[SeriesPoint]:
    """Per-node IB throughput (tx + rx over all ports, bytes/s): median and worst node per timestamp."""
    return run_series.ib_series(_spans(holdings), start, end)
