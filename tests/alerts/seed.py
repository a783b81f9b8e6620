"""Rows written straight into ingest's tables for alert tests (and the bench): nodes, ports, samples."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from ingest import rollups
from ingest.models import IbPort, IngestCursor, Node, XidEvent
from ingest.store import GPU_TABLE, IB_TABLE, insert_rows
from runs.models import Job, Pod, PodAssignment

STEP = 30.0
HEALTHY_GPU = {"util": 99.0, "tensor": 0.45, "sm": 0.6, "power": 620.0}
HEALTHY_IB = {"tx_bytes": 20e9, "rx_bytes": 20e9, "xmit_wait": 1000.0, "state": 4, "saturated": 0}
#: A hung GPU's values: busy util, idle tensor cores and SMs, idle power (gpu_tensor_drift).
DRIFTING_GPU = {"util": 100.0, "tensor": 0.003, "sm": 0.02, "power": 72.0}


def drifting(on: Callable[[float, int], bool]) -> dict[str, Callable[[float, int], float]]:
    """``gpu_rows`` values: DRIFTING_GPU where ``on(ts, gpu)``, HEALTHY_GPU elsewhere."""
    return {
        name: (lambda ts, g, name=name: DRIFTING_GPU[name] if on(ts, g) else HEALTHY_GPU[name])
        for name in DRIFTING_GPU
    }


def dt(ts: float) -> datetime:
    """Unix seconds → aware UTC datetime."""
    return datetime.fromtimestamp(ts, UTC)


def nodes(
    names: Iterable[str], leaf: Callable[[str, int], str] | None = None, ports: int = 8
) -> dict[str, Node]:
    """Create nodes with ``ports`` IB ports each (mlx5_0..), leaf switch from ``leaf(node, port)``."""
    made = {}
    for name in names:
        node = Node.objects.create(name=name, pool="training")
        IbPort.objects.bulk_create(
            [
                IbPort(
                    node=node, device=f"mlx5_{p}", port=1, leaf_switch=leaf(name, p) if leaf else ""
                )
                for p in range(ports)
            ]
        )
        made[name] = node
    return made


def run(name: str, on: Iterable[Node], start: float, end: float, namespace: str = "train") -> Job:
    """A running job with one pod assigned to each node for [start, end]."""
    job = Job.objects.create(namespace=namespace, name=name, state=Job.State.RUNNING)
    for i, node in enumerate(on):
        pod = Pod.objects.create(job=job, namespace=namespace, name=f"{name}-{i}", phase="Running")
        PodAssignment.objects.create(pod=pod, node=node, first_seen=dt(start), last_seen=dt(end))
    return job


def gpu_rows(node: Node, start: float, end: float, gpus: int = 8, **values: Any) -> list[tuple]:
    """GpuSample rows every STEP in [start, end]; values may be callables (ts, gpu) → value."""
    merged = {**HEALTHY_GPU, **values}
    rows = []
    ts = start
    while ts <= end:
        for gpu in range(gpus):
            v = {k: (f(ts, gpu) if callable(f) else f) for k, f in merged.items()}
            rows.append((dt(ts), node.pk, gpu, v["util"], v["tensor"], v["sm"], None, v["power"], 40.0, None,
                         v.get("nvlink_crc_flit", 0.0), v.get("nvlink_crc_data", 0.0), 0.0, 0.0))  # fmt: skip
        ts += STEP
    return rows


def ib_rows(node: Node, start: float, end: float, **values: Any) -> list[tuple]:
    """IbSample rows every STEP for each port of the node; values may be callables (ts, device) → value."""
    merged = {**HEALTHY_IB, **values}
    rows = []
    ports = list(IbPort.objects.filter(node=node))
    ts = start
    while ts <= end:
        for port in ports:
            v = {k: (f(ts, port.device) if callable(f) else f) for k, f in merged.items()}
            rows.append((dt(ts), port.pk, node.pk, v["tx_bytes"], v["rx_bytes"], 5e6, 5e6, v["xmit_wait"],
                         v.get("symbol_errors", 0.0), v.get("link_downed", 0.0), 0.0, v.get("rcv_errors", 0.0),
                         v.get("local_link_integrity", 0.0), 0.0, 50e9, v["state"], 5, v["saturated"]))  # fmt: skip
        ts += STEP
    return rows


def write_gpu(rows: list[tuple]) -> int:
    """Insert GpuSample rows (partitions created as needed)."""
    return insert_rows(GPU_TABLE, rows)


def write_ib(rows: list[tuple]) -> int:
    """Insert IbSample rows (partitions created as needed) and their per-node step totals, as ingest does."""
    written = insert_rows(IB_TABLE, rows)
    if rows:
        rollups.refresh_ib_node_steps(min(r[0] for r in rows), max(r[0] for r in rows))
    return written


def xid(node: Node, gpu: int, ts: float, code: int) -> XidEvent:
    """An XID event."""
    return XidEvent.objects.create(node=node, gpu=gpu, ts=dt(ts), code=code, message=f"xid {code}")


def cover(
    until: float, families: Iterable[str] = ("gpu", "ib", "kueue", "runs", "checkpoints")
) -> None:
    """Move the ingest cursors of ``families`` to ``until``."""
    for family in families:
        IngestCursor.objects.update_or_create(family=family, defaults={"covered_until": dt(until)})
