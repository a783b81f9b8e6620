"""Small simulated clusters behind a real Prometheus, one per exporter dialect variant."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from simulator import Cluster, ClusterSpec, Dialect, ExporterOptions, Fault, FaultKind
from tests.support.prometheus import SimulatedPrometheus, simulated_prometheus

STEP = 30
HISTORY = timedelta(minutes=40)


def small_cluster(options: ExporterOptions, end: float, nodes: int = 4) -> Cluster:
    """``nodes`` nodes with an XID 79 on node 0 GPU 2 and a pegged transmit_wait on node 1 port 1."""
    epoch = datetime.fromtimestamp(end, UTC)
    names = [
        n.name
        for n in Cluster(ClusterSpec(nodes=nodes, seed=3, epoch=epoch, exporters=options)).nodes
    ]
    faults = [
        Fault(FaultKind.XID, epoch - timedelta(minutes=20), epoch - timedelta(minutes=10),
              nodes=[names[0]], gpus=[2], params={"code": 79}),
        Fault(FaultKind.IB_COUNTER_SATURATED, epoch - timedelta(minutes=25), epoch - timedelta(minutes=15),
              nodes=[names[1]], ports=[1]),
    ]  # fmt: skip
    return Cluster(ClusterSpec(nodes=nodes, seed=3, epoch=epoch, exporters=options, faults=faults))


@contextmanager
def variant(workdir: Path, **options: object) -> Iterator[SimulatedPrometheus]:
    """A Prometheus holding 40 min of history (every family) of a small cluster with ``options``."""
    end = float(int(time.time() // STEP) * STEP)
    dialects = frozenset(options.pop("dialects", (Dialect.DCGM, Dialect.NODE_IB, Dialect.TREYDOCK)))
    cluster = small_cluster(ExporterOptions(dialects=dialects, **options), end)
    with simulated_prometheus(cluster, workdir, HISTORY, STEP, "2s", "all", end) as prom:
        yield prom
