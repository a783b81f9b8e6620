"""What ingest stores: cluster dimensions (nodes, ports, queues) and time series.

Runs (jobs, pods, assignments, events, checkpoints) belong to the ``runs`` app.

Time-series tables (``GpuSample``, ``IbSample``, ``KueueSample`` and the 5-minute
rollups) are range-partitioned by day in Postgres and written with binary COPY;
their models are unmanaged (the migrations create the partitioned tables with
SQL) and exist so other apps can read them through the ORM in tests and admin.
Every time-series row covers one ingest step ending at ``ts``: gauges are the
value at ``ts``, rates are per second over the step, "increase" columns are the
counter increase over the step.
"""

from __future__ import annotations

from .choices import Family, Pool
from .cluster import IbPort, Node, PoolChange, XidEvent
from .kueue import ClusterQueue, KueueEviction, KueueQuota, KueueSample
from .operations import (
    Compaction,
    FamilyHealth,
    IngestCursor,
    IngestCycle,
    PrometheusOutage,
    ShardCursor,
)
from .timeseries import (
    GpuHotSample,
    GpuRollup,
    GpuSample,
    GpuValues,
    HeatmapTile,
    IbHotSample,
    IbNodeStep,
    IbRollup,
    IbSample,
    IbValues,
    NodeRollup,
    NodeTile,
)

__all__ = [
    "Family",
    "Pool",
    "Node",
    "PoolChange",
    "IbPort",
    "XidEvent",
    "GpuValues",
    "GpuHotSample",
    "GpuSample",
    "GpuRollup",
    "IbValues",
    "IbHotSample",
    "IbSample",
    "IbRollup",
    "NodeRollup",
    "HeatmapTile",
    "NodeTile",
    "IbNodeStep",
    "ClusterQueue",
    "KueueSample",
    "KueueEviction",
    "KueueQuota",
    "IngestCursor",
    "ShardCursor",
    "FamilyHealth",
    "IngestCycle",
    "PrometheusOutage",
    "Compaction",
]
