"""One module per family / exporter dialect. ``SOURCES`` maps a family to its Source class."""

from __future__ import annotations

from django.utils.module_loading import import_string

from ..models import Family
from .base import Source

#: Dotted paths, imported lazily so one broken source never breaks the others.
SOURCE_PATHS: dict[str, str] = {
    Family.GPU: "ingest.sources.dcgm.GpuSource",
    Family.IB: "ingest.sources.infiniband.IbSource",
    Family.TOPOLOGY: "ingest.sources.topology.TopologySource",
    Family.KUEUE: "ingest.sources.kueue.KueueSource",
    Family.CLUSTER: "ingest.sources.kube_state.ClusterSource",
    Family.RUNS: "ingest.sources.runs.RunsSource",
    Family.CHECKPOINTS: "ingest.sources.checkpoints.CheckpointSource",
}


def source_for(family: str) -> Source:
    """An instance of the family's source."""
    return import_string(SOURCE_PATHS[family])()
