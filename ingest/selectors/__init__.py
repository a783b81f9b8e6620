"""The read API other apps use (dashboard, alerts): plain structures, no ORM objects, no SQL.

Every read of ingest's tables from outside ingest goes through this package (a test keeps it
so): ``heatmaps`` and ``series`` for the dashboard's charts, ``samples`` for raw samples and
health, ``rule_inputs`` for what the alert rules evaluate, ``placement`` for the hardware
behind a node (its runs are the runs app's, ``runs.selectors``), ``overview`` for the cluster
overview's pool and queue figures, ``nodes`` for the node inventory. Raw samples are read through ``ingest.history.gpu_rows`` /
``ib_rows``: hot rows and compacted history alike.
"""

from __future__ import annotations

# The vocabulary readers share (families, pools), so that they need not import ingest.models.
from ..models.choices import Family, Pool
from .heatmaps import HeatmapMatrix, HeatmapRows, RailMatrix, heatmap, heatmap_rows, rail_matrix
from .samples import (
    FamilyHealthRow,
    GpuRow,
    IbRow,
    XidRow,
    family_health,
    gpu_samples_between,
    ib_samples_between,
    xid_events,
)
from .series import NodeLatest, NodeSeries, latest_per_node, node_gpu_series, node_ib_series
from .windows import use_rollup

__all__ = [
    "Family",
    "FamilyHealthRow",
    "GpuRow",
    "HeatmapMatrix",
    "HeatmapRows",
    "IbRow",
    "NodeLatest",
    "NodeSeries",
    "Pool",
    "RailMatrix",
    "XidRow",
    "family_health",
    "gpu_samples_between",
    "heatmap",
    "heatmap_rows",
    "ib_samples_between",
    "latest_per_node",
    "node_gpu_series",
    "node_ib_series",
    "rail_matrix",
    "use_rollup",
    "xid_events",
]
