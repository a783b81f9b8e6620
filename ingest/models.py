"""What ingest stores: cluster dimensions (nodes, ports, queues, jobs) and time series.

Time-series tables (``GpuSample``, ``IbSample``, ``KueueSample`` and the 5-minute
rollups) are range-partitioned by day in Postgres and written with binary COPY;
their models are unmanaged (the migrations create the partitioned tables with
SQL) and exist so other apps can read them through the ORM in tests and admin.
Every time-series row covers one ingest step ending at ``ts``: gauges are the
value at ``ts``, rates are per second over the step, "increase" columns are the
counter increase over the step.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Family(models.TextChoices):
    """Ingest families: each has its own cursor, health row and PromQL."""

    GPU = "gpu", "GPU (dcgm-exporter)"
    IB = "ib", "InfiniBand"
    TOPOLOGY = "topology", "IB topology"
    KUEUE = "kueue", "Kueue"
    CLUSTER = "cluster", "Cluster membership"
    RUNS = "runs", "Runs (pods and jobs)"
    CHECKPOINTS = "checkpoints", "Checkpoints"


class Pool(models.TextChoices):
    TRAINING = "training", "Training"
    INFERENCE = "inference", "Inference"
    UNKNOWN = "unknown", "Unknown"


class Node(models.Model):
    """A Kubernetes node seen in any family; the name is an untrusted label value."""

    name = models.CharField(max_length=253, unique=True)
    pool = models.CharField(max_length=16, choices=Pool.choices, default=Pool.UNKNOWN)
    unschedulable = models.BooleanField(default=False)
    leaf_switch = models.CharField(
        max_length=253, blank=True, help_text="Most common leaf of its ports."
    )
    gpu_model = models.CharField(max_length=100, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PoolChange(models.Model):
    """A node's pool over time (taint changes), so capacity flips can be charted."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="pool_changes")
    ts = models.DateTimeField()
    pool = models.CharField(max_length=16, choices=Pool.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["node", "ts"], name="uniq_pool_change")]


class IbPort(models.Model):
    """One HCA port of a node (device mlx5_N, port 1) and where it plugs into the fabric."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="ib_ports")
    device = models.CharField(max_length=64)
    port = models.PositiveSmallIntegerField(default=1)
    guid = models.CharField(max_length=32, blank=True)
    leaf_switch = models.CharField(max_length=253, blank=True)
    switch_port = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["node__name", "device", "port"]
        constraints = [
            models.UniqueConstraint(fields=["node", "device", "port"], name="uniq_ib_port")
        ]

    def __str__(self) -> str:
        return f"{self.node.name}/{self.device}:{self.port}"


class GpuValues(models.Model):
    """The per-GPU value columns shared by raw samples and 5-minute rollups."""

    util = models.FloatField(null=True, help_text="DCGM_FI_DEV_GPU_UTIL, percent 0..100")
    tensor = models.FloatField(null=True, help_text="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio 0..1")
    sm = models.FloatField(null=True, help_text="DCGM_FI_PROF_SM_ACTIVE, ratio 0..1")
    dram = models.FloatField(null=True, help_text="DCGM_FI_PROF_DRAM_ACTIVE, ratio 0..1")
    power = models.FloatField(null=True, help_text="W")
    temp = models.FloatField(null=True, help_text="°C")
    nvlink_bw = models.FloatField(null=True, help_text="bytes/s")
    nvlink_crc_flit = models.FloatField(null=True, help_text="increase over the step")
    nvlink_crc_data = models.FloatField(null=True, help_text="increase over the step")
    nvlink_replay = models.FloatField(null=True, help_text="increase over the step")
    nvlink_recovery = models.FloatField(null=True, help_text="increase over the step")

    class Meta:
        abstract = True


class GpuSample(GpuValues):
    """Per-GPU values at one step (partitioned by day; written with COPY)."""

    pk = models.CompositePrimaryKey("node_id", "gpu", "ts")
    ts = models.DateTimeField()
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    gpu = models.SmallIntegerField()

    class Meta:
        managed = False
        db_table = "ingest_gpusample"


class GpuRollup(GpuValues):
    """Per-GPU 5-minute rollup starting at ``ts``: means of gauges/rates, sums of increases."""

    pk = models.CompositePrimaryKey("node_id", "gpu", "ts")
    ts = models.DateTimeField(help_text="start of the 5-minute bucket")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    gpu = models.SmallIntegerField()

    class Meta:
        managed = False
        db_table = "ingest_gpurollup"


class IbValues(models.Model):
    """The per-port value columns shared by raw samples and 5-minute rollups."""

    tx_bytes = models.FloatField(null=True, help_text="bytes/s")
    rx_bytes = models.FloatField(null=True, help_text="bytes/s")
    tx_packets = models.FloatField(null=True, help_text="packets/s")
    rx_packets = models.FloatField(null=True, help_text="packets/s")
    xmit_wait = models.FloatField(null=True, help_text="ticks/s")
    symbol_errors = models.FloatField(null=True, help_text="increase over the step")
    link_downed = models.FloatField(null=True, help_text="increase over the step")
    link_error_recovery = models.FloatField(null=True, help_text="increase over the step")
    rcv_errors = models.FloatField(null=True, help_text="increase over the step")
    local_link_integrity = models.FloatField(null=True, help_text="increase over the step")
    excessive_buffer_overrun = models.FloatField(null=True, help_text="increase over the step")
    state = models.SmallIntegerField(null=True, help_text="4 = active")
    phys_state = models.SmallIntegerField(null=True, help_text="5 = LinkUp")
    rate = models.FloatField(null=True, help_text="link capacity, bytes/s")
    saturated = models.SmallIntegerField(default=0, help_text="bitmask of pegged 32-bit counters")

    class Meta:
        abstract = True


class IbSample(IbValues):
    """Per-IB-port values at one step (partitioned by day; written with COPY)."""

    pk = models.CompositePrimaryKey("port_id", "ts")
    ts = models.DateTimeField()
    port = models.ForeignKey(IbPort, on_delete=models.DO_NOTHING, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)

    class Meta:
        managed = False
        db_table = "ingest_ibsample"


class IbRollup(IbValues):
    """Per-port 5-minute rollup starting at ``ts`` (min of state, bitwise-or of saturated)."""

    pk = models.CompositePrimaryKey("port_id", "ts")
    ts = models.DateTimeField(help_text="start of the 5-minute bucket")
    port = models.ForeignKey(IbPort, on_delete=models.DO_NOTHING, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)

    class Meta:
        managed = False
        db_table = "ingest_ibrollup"


class NodeRollup(models.Model):
    """Per-node 5-minute rollup at ``ts``, derived from that bucket's GPU and port rollups.

    Heatmaps and pool summaries over long windows read these (one row per node
    and bucket) instead of grouping eight GPU or port rows each. GPU columns are
    NULL/0 where the node had no GPU rollup in the bucket, IB columns likewise.
    """

    pk = models.CompositePrimaryKey("ts", "node_id")
    ts = models.DateTimeField(help_text="start of the 5-minute bucket")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    gpus = models.SmallIntegerField(default=0, help_text="GPU rollup rows in the bucket")
    util_gpus = models.SmallIntegerField(default=0, help_text="GPUs with a util value")
    tensor_gpus = models.SmallIntegerField(default=0, help_text="GPUs with a tensor value")
    drifted_gpus = models.SmallIntegerField(
        default=0, help_text="GPUs busy by util, idle by tensor"
    )
    util = models.FloatField(null=True, help_text="mean GPU util, percent")
    tensor = models.FloatField(null=True, help_text="mean tensor active, ratio")
    drift = models.FloatField(null=True, help_text="mean of util/100 − tensor over GPUs")
    nvlink_bw = models.FloatField(null=True, help_text="NVLink bytes/s summed over GPUs")
    nvlink_errors = models.FloatField(null=True, help_text="NVLink error increases, all GPUs")
    ports = models.SmallIntegerField(default=0, help_text="port rollup rows in the bucket")
    active_ports = models.SmallIntegerField(default=0, help_text="ports active all bucket long")
    ib_tx = models.FloatField(null=True, help_text="bytes/s summed over ports")
    ib_rx = models.FloatField(null=True, help_text="bytes/s summed over ports")
    ib_xmit_wait = models.FloatField(null=True, help_text="ticks/s summed over ports")
    ib_errors = models.FloatField(null=True, help_text="IB error increases, all ports")

    class Meta:
        managed = False
        db_table = "ingest_noderollup"


class XidEvent(models.Model):
    """A new or changed XID code on a GPU (DCGM's gauge is sticky: only changes are events)."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="xid_events")
    gpu = models.SmallIntegerField()
    ts = models.DateTimeField()
    code = models.IntegerField()
    message = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-ts"]
        constraints = [
            models.UniqueConstraint(fields=["node", "gpu", "ts", "code"], name="uniq_xid")
        ]


class ClusterQueue(models.Model):
    """A Kueue ClusterQueue."""

    name = models.CharField(max_length=253, unique=True)
    cohort = models.CharField(max_length=253, blank=True)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.name


class KueueSample(models.Model):
    """Per-ClusterQueue values at one step."""

    pk = models.CompositePrimaryKey("cluster_queue_id", "ts")
    ts = models.DateTimeField()
    cluster_queue = models.ForeignKey(
        ClusterQueue, on_delete=models.DO_NOTHING, db_constraint=False
    )
    pending_active = models.FloatField(null=True)
    pending_inadmissible = models.FloatField(null=True)
    admitted_active = models.FloatField(null=True)
    admitted = models.FloatField(null=True, help_text="admissions over the step")
    wait_p50 = models.FloatField(null=True, help_text="admission wait seconds, over the step")
    wait_p95 = models.FloatField(null=True, help_text="admission wait seconds, over the step")

    class Meta:
        managed = False
        db_table = "ingest_kueuesample"


class KueueEviction(models.Model):
    """Evictions / preemptions of a ClusterQueue's workloads over one step, by reason."""

    class Kind(models.TextChoices):
        EVICTED = "evicted", "Evicted"
        PREEMPTED = "preempted", "Preempted"

    cluster_queue = models.ForeignKey(ClusterQueue, on_delete=models.CASCADE)
    ts = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.CharField(max_length=100)
    count = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_queue", "ts", "kind", "reason"], name="uniq_eviction"
            )
        ]


class KueueQuota(models.Model):
    """Quota usage of a ClusterQueue per flavor and resource, when Kueue reports it."""

    cluster_queue = models.ForeignKey(ClusterQueue, on_delete=models.CASCADE)
    ts = models.DateTimeField()
    flavor = models.CharField(max_length=100)
    resource = models.CharField(max_length=100)
    usage = models.FloatField()
    nominal = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_queue", "ts", "flavor", "resource"], name="uniq_quota"
            )
        ]


class Job(models.Model):
    """A training run: a Kubernetes Job (namespace + name, from kube_pod_info's created_by_name)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        UNKNOWN = "unknown", "Unknown"

    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    local_queue = models.CharField(max_length=253, blank=True)
    cluster_queue = models.ForeignKey(
        ClusterQueue, null=True, blank=True, on_delete=models.SET_NULL
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.UNKNOWN)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-first_seen"]
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="uniq_job")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Pod(models.Model):
    """A pod of a job; its node assignments over time are in ``PodAssignment``."""

    job = models.ForeignKey(
        Job, null=True, blank=True, on_delete=models.CASCADE, related_name="pods"
    )
    namespace = models.CharField(max_length=253)
    name = models.CharField(max_length=253)
    phase = models.CharField(max_length=32, blank=True)
    restarts = models.IntegerField(default=0)
    first_seen = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["namespace", "name"], name="uniq_pod")]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class PodAssignment(models.Model):
    """A pod held a node from ``first_seen`` to ``last_seen`` (run → node membership over time)."""

    pod = models.ForeignKey(Pod, on_delete=models.CASCADE, related_name="assignments")
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="pod_assignments")
    first_seen = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pod", "node", "first_seen"], name="uniq_assignment")
        ]


class RunEvent(models.Model):
    """Something that happened to a run: a pod restart, a phase change, an eviction."""

    class Kind(models.TextChoices):
        STARTED = "started", "Started"
        RESTART = "restart", "Pod restart (crash)"
        FAILED = "failed", "Failed"
        SUCCEEDED = "succeeded", "Succeeded"
        EVICTED = "evicted", "Evicted"
        PREEMPTED = "preempted", "Preempted"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    ts = models.DateTimeField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    pod = models.CharField(max_length=253, blank=True)
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["ts"]
        constraints = [
            models.UniqueConstraint(fields=["job", "ts", "kind", "pod"], name="uniq_run_event")
        ]


class Checkpoint(models.Model):
    """One checkpoint of a run, from the Prometheus gauges or pushed by the job over the API."""

    class Source(models.TextChoices):
        PROMETHEUS = "prometheus", "Prometheus gauges"
        API = "api", "Pushed over the API"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.BigIntegerField()
    ts = models.DateTimeField()
    duration_seconds = models.FloatField(null=True, blank=True)
    bytes = models.BigIntegerField(null=True, blank=True)
    path = models.CharField(max_length=1000, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)

    class Meta:
        ordering = ["ts"]
        constraints = [models.UniqueConstraint(fields=["job", "step"], name="uniq_checkpoint_step")]


class IngestCursor(models.Model):
    """How far a family is ingested; advanced in the same transaction as the rows it covers."""

    family = models.CharField(max_length=16, choices=Family.choices, primary_key=True)
    covered_until = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.family} until {self.covered_until:%Y-%m-%d %H:%M:%S}"


class FamilyHealth(models.Model):
    """The latest ingest outcome of a family (shown in /readyz, /metrics, the overview)."""

    family = models.CharField(max_length=16, choices=Family.choices, primary_key=True)
    last_attempt = models.DateTimeField(null=True)
    last_success = models.DateTimeField(null=True)
    lag_seconds = models.FloatField(null=True)
    duration_seconds = models.FloatField(null=True)
    rows = models.BigIntegerField(default=0, help_text="rows written, total since the first cycle")
    skipped = models.BigIntegerField(default=0, help_text="points skipped, total")
    errors = models.BigIntegerField(default=0, help_text="failed cycles, total")
    last_rows = models.IntegerField(default=0, help_text="rows written by the last cycle")
    last_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.family


class IngestCycle(models.Model):
    """One ingest cycle of one family: the history behind ``FamilyHealth``."""

    family = models.CharField(max_length=16, choices=Family.choices)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    rows = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["family", "-started_at"])]


class PrometheusOutage(models.Model):
    """A period when Prometheus could not be queried; the gap is caught up afterwards."""

    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]


class ShardCursor(models.Model):
    """How far one shard (a stable hash group of nodes) of a family is ingested.

    Advanced in the same transaction as the shard's rows. ``shards`` is the shard
    count the cursor belongs to: changing INGEST_SHARDS starts a new set from the
    family cursor, which is the minimum of the current set.
    """

    family = models.CharField(max_length=16, choices=Family.choices)
    shards = models.PositiveSmallIntegerField()
    shard = models.PositiveSmallIntegerField()
    covered_until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["family", "shards", "shard"], name="uniq_shard_cursor")
        ]

    def __str__(self) -> str:
        return f"{self.family} {self.shard}/{self.shards} until {self.covered_until:%H:%M:%S}"
