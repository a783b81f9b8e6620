"""Write a small, exactly known cluster through ingest's store (and its rollups)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from core import clock
from ingest import rollups
from ingest.models import ClusterQueue, FamilyHealth, IbPort, Node
from ingest.partitions import ensure_partitions
from ingest.store import GPU_TABLE, GPU_VALUE_COLUMNS, IB_TABLE, IB_VALUE_COLUMNS, insert_rows

XSS_NODE = '<img src=x onerror="window.__xss=1">'
SCRIPT_NODE = "<script>window.__xss=2"  # no "/": node URLs take any character but "/"
UTIL = 90.0
TENSOR = 0.5
DRIFT_UTIL, DRIFT_TENSOR = 100.0, 0.02
TX_PER_PORT = 1.0e9


@dataclass
class Cluster:
    """What was written: node names (sorted), the drift node, the window and its step."""

    start: datetime
    end: datetime
    step: int
    nodes: list[str]
    drift_node: str
    error_node: str
    ports: int
    gpus: int
    node_ids: dict[str, int] = field(default_factory=dict)


def align(moment: datetime, seconds: int = 300) -> datetime:
    """Round down to a multiple of ``seconds`` since the epoch."""
    return datetime.fromtimestamp(int(moment.timestamp()) // seconds * seconds, UTC)


def gpu_row(ts: datetime, node_id: int, gpu: int, util: float, tensor: float) -> tuple:
    values = dict.fromkeys(GPU_VALUE_COLUMNS)
    values.update(util=util, tensor=tensor, power=300.0 if tensor > 0.1 else 70.0, nvlink_bw=5e9)
    return (ts, node_id, gpu, *values.values())


def ib_row(ts: datetime, port_id: int, node_id: int, tx: float, errors: float) -> tuple:
    values = dict.fromkeys(IB_VALUE_COLUMNS)
    values.update(tx_bytes=tx, rx_bytes=tx / 2, xmit_wait=10.0, symbol_errors=errors, state=4,
                  phys_state=5, rate=5e10, saturated=0)  # fmt: skip
    return (ts, port_id, node_id, *values.values())


@transaction.atomic  # the store stages rows in an ON COMMIT DELETE ROWS temp table: one transaction
def write_samples(cluster: Cluster, start: datetime, end: datetime) -> int:
    """Samples every ``cluster.step`` s in [start, end): the drift node drifts, one port errs."""
    gpu_rows, ib_rows = [], []
    ports = {
        (p.node_id, p.device): p.pk
        for p in IbPort.objects.filter(node_id__in=cluster.node_ids.values())
    }
    ts = start
    while ts < end:
        for name, node_id in cluster.node_ids.items():
            util, tensor = (
                (DRIFT_UTIL, DRIFT_TENSOR) if name == cluster.drift_node else (UTIL, TENSOR)
            )
            gpu_rows += [gpu_row(ts, node_id, gpu, util, tensor) for gpu in range(cluster.gpus)]
            for index in range(cluster.ports):
                errors = 1.0 if name == cluster.error_node and index == 1 else 0.0
                ib_rows.append(
                    ib_row(ts, ports[(node_id, f"mlx5_{index}")], node_id, TX_PER_PORT, errors)
                )
        ts += timedelta(seconds=cluster.step)
    written = insert_rows(GPU_TABLE, gpu_rows) + insert_rows(IB_TABLE, ib_rows)
    rollups.refresh("gpu", start, end - timedelta(seconds=1))
    rollups.refresh("ib", start, end - timedelta(seconds=1))
    Node.objects.filter(pk__in=cluster.node_ids.values()).update(
        last_seen=end - timedelta(seconds=cluster.step)
    )
    return written


@transaction.atomic
def make_cluster(
    count: int = 4, hours: float = 1.0, end: datetime | None = None, step: int = 30, gpus: int = 2, ports: int = 2,
    hostile_names: bool = True,
) -> Cluster:  # fmt: skip
    """``count`` nodes (two with HTML in their names) with ``hours`` of samples ending at ``end``."""
    end = end or align(clock.now())
    start = end - timedelta(hours=hours)
    names = [f"gpu-{i:03d}" for i in range(1, count + 1)]
    if hostile_names:
        names[-2:] = [XSS_NODE, SCRIPT_NODE]
    cluster = Cluster(start, end, step, sorted(names), drift_node=names[1], error_node=names[0], ports=ports,
                      gpus=gpus)  # fmt: skip
    for i, name in enumerate(names):
        node = Node.objects.create(name=name, pool="training" if i % 4 else "inference",
                                   leaf_switch=f"leaf-{(count - i) % 3}", gpu_model="H100", first_seen=start)  # fmt: skip
        cluster.node_ids[name] = node.pk
        IbPort.objects.bulk_create(
            IbPort(node=node, device=f"mlx5_{p}", port=1, guid=f"0x{i:04x}{p:02x}")
            for p in range(ports)
        )
    write_samples(cluster, start, end)
    FamilyHealth.objects.create(family="gpu", last_attempt=end, last_success=clock.now(), lag_seconds=31.0,
                                rows=100, duration_seconds=0.4)  # fmt: skip
    return cluster


# (minutes from the latest sample, wait p95 s) of cq-wait's admissions: the latest step has none
WAITS = {-70: 500.0, -35: 42.0, -20: 75.0, -10: 30.0}


def make_queues(latest: datetime) -> None:
    """cq-wait: 1 pending, 4 running, admissions 70, 35, 20 and 10 min before its latest sample;
    cq-idle: its only admission 2 h before."""
    waiting = ClusterQueue.objects.create(name="cq-wait", first_seen=latest - timedelta(hours=3),
                                          last_seen=latest)  # fmt: skip
    idle = ClusterQueue.objects.create(name="cq-idle", first_seen=latest - timedelta(hours=3),
                                       last_seen=latest)  # fmt: skip
    ensure_partitions(latest - timedelta(hours=3), latest)
    rows = []
    for minute in range(-80, 1):
        ts = latest + timedelta(minutes=minute)
        wait = WAITS.get(minute)
        rows.append((ts, waiting.pk, 1.0, 0.0, 4.0, 0.0 if wait is None else 1.0, wait, wait))
        rows.append((ts, idle.pk, 0.0, 2.0, 0.0, 0.0, None, None))
    rows.append((latest - timedelta(hours=2), idle.pk, 0.0, 2.0, 0.0, 1.0, 60.0, 60.0))
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_kueuesample (ts, cluster_queue_id, pending_active, pending_inadmissible, "
            "admitted_active, admitted, wait_p50, wait_p95) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
