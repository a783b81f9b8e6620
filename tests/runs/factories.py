"""A constructed run in the database: nodes, pods, GPU and IB samples, a crash, checkpoints, Kueue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils import timezone

from ingest.models import ClusterQueue, IbPort, KueueEviction, KueueQuota, Node
from ingest.partitions import ensure_partitions
from runs.models import Checkpoint, Job, Pod, PodAssignment, RunEvent

STEP = timedelta(seconds=30)
GPUS = 2  # per node, to keep the tables small


@dataclass(frozen=True)
class Scenario:
    """What was built, with the hand-computed figures the tests compare against."""

    job: Job
    start: datetime
    crash: datetime
    resume: datetime
    last_checkpoint_before_crash: datetime
    end: datetime
    checkpoint_seconds: float


def aligned_start(hours_ago: float = 3) -> datetime:
    now = timezone.now() - timedelta(hours=hours_ago)
    return datetime.fromtimestamp(int(now.timestamp()) // 60 * 60, tz=UTC)


def _samples(
    nodes: list[Node],
    ports: list[IbPort],
    start: datetime,
    end: datetime,
    idle: tuple[datetime, datetime],
) -> None:
    ensure_partitions(start - timedelta(days=1), end + timedelta(days=1))
    gpu_rows, ib_rows = [], []
    ts = start
    while ts <= end:
        busy = not idle[0] <= ts < idle[1]
        for node in nodes:
            for gpu in range(GPUS):
                gpu_rows.append((ts, node.pk, gpu, 98.0 if busy else 0.0, 0.6 if busy else 0.0))
        for port in ports:
            ib_rows.append(
                (ts, port.pk, port.node_id, 2e10 if busy else 0.0, 2e10 if busy else 0.0)
            )
        ts += STEP
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_gpusample (ts, node_id, gpu, util, tensor) VALUES (%s, %s, %s, %s, %s)",
            gpu_rows,
        )
        cursor.executemany(
            "INSERT INTO ingest_ibsample (ts, port_id, node_id, tx_bytes, rx_bytes) VALUES (%s, %s, %s, %s, %s)",
            ib_rows,
        )


def build_run(name: str = "llama-70b", *, start: datetime | None = None, node_prefix: str = "gpu",
              detail: str = "OOMKilled", with_samples: bool = True) -> Scenario:  # fmt: skip
    """A 2-hour, 2-node run: checkpoints at 20/40/60 min (30 s writes), a crash at 70 min, busy again at 74 min."""
    start = start or aligned_start()
    end = start + timedelta(hours=2)
    queue, _ = ClusterQueue.objects.get_or_create(name="cq-a", defaults={"cohort": "research"})
    job = Job.objects.create(namespace="team-a", name=name, local_queue="lq-a", cluster_queue=queue,
                             state=Job.State.RUNNING, first_seen=start, last_seen=end)  # fmt: skip
    nodes = [Node.objects.get_or_create(name=f"{node_prefix}-{i:02d}")[0] for i in range(2)]
    ports = [IbPort.objects.get_or_create(node=node, device="mlx5_0", port=1)[0] for node in nodes]
    for i, node in enumerate(nodes):
        pod = Pod.objects.create(job=job, namespace="team-a", name=f"{name}-worker-{i}", phase="Running",
                                 restarts=1, first_seen=start, last_seen=end)  # fmt: skip
        PodAssignment.objects.create(pod=pod, node=node, first_seen=start, last_seen=end)
    crash, resume = start + timedelta(minutes=70), start + timedelta(minutes=74)
    RunEvent.objects.create(job=job, ts=start, kind=RunEvent.Kind.STARTED, pod=f"{name}-worker-0")
    RunEvent.objects.create(
        job=job, ts=crash, kind=RunEvent.Kind.RESTART, pod=f"{name}-worker-1", detail=detail
    )
    for step, minutes in ((200, 20), (400, 40), (600, 60), (800, 94)):
        Checkpoint.objects.create(job=job, step=step, ts=start + timedelta(minutes=minutes), duration_seconds=30.0,
                                  bytes=5_000_000_000, path=f"s3://ckpt/{name}/{step}", source=Checkpoint.Source.API)  # fmt: skip
    if with_samples:
        _samples(nodes, ports, start, end, (crash, resume))
    return Scenario(job, start, crash, resume, start + timedelta(minutes=60), end, 30.0)


def build_queues(now: datetime) -> None:
    """cq-a stalled (3 pending, no admission for 20 min), cq-b admitting; one eviction and one quota row."""
    stalled, _ = ClusterQueue.objects.get_or_create(name="cq-a", defaults={"cohort": "research"})
    busy, _ = ClusterQueue.objects.get_or_create(name="cq-b")
    ensure_partitions(now - timedelta(days=1), now + timedelta(days=1))
    rows = []
    ts = now - timedelta(minutes=20)
    while ts <= now:
        rows.append((ts, stalled.pk, 3.0, 0.0, 1.0, 0.0, 600.0, 900.0))
        rows.append((ts, busy.pk, 1.0, 0.0, 4.0, 1.0, 30.0, 60.0))
        ts += STEP
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ingest_kueuesample (ts, cluster_queue_id, pending_active, pending_inadmissible, "
            "admitted_active, admitted, wait_p50, wait_p95) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    KueueEviction.objects.create(cluster_queue=busy, ts=now - timedelta(minutes=5), kind="preempted",
                                 reason="InClusterQueue", count=2)  # fmt: skip
    KueueQuota.objects.create(cluster_queue=busy, ts=now - timedelta(minutes=1), flavor="h100",
                              resource="nvidia.com/gpu", usage=32, nominal=64)  # fmt: skip
