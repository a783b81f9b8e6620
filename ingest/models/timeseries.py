"""Per-GPU, per-port and per-node time series (partitioned tables, written with COPY)."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models

from .cluster import IbPort, Node


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


class GpuRow(GpuValues):
    """A GPU's values at one step, as every reader sees them (per-GPU, split or decoded rows)."""

    pk = models.CompositePrimaryKey("node_id", "gpu", "ts")
    ts = models.DateTimeField()
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    gpu = models.SmallIntegerField()
    # Hardware health (raw only, not rolled up; docs/dcgm.md "Hardware health"). real columns:
    # whole counts and a 9-bit mask are exact in float4, at half the width of float8.
    ecc_dbe_vol = models.FloatField(
        null=True, help_text="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL as read: DBEs since the last GPU reset"
    )
    pcie_replay = models.FloatField(
        null=True, help_text="DCGM_FI_DEV_PCIE_REPLAY_COUNTER: increase over the step"
    )
    row_remap_failure = models.FloatField(
        null=True, help_text="DCGM_FI_DEV_ROW_REMAP_FAILURE: 1 = row remapping failed"
    )
    row_remap_pending = models.FloatField(
        null=True, help_text="DCGM_FI_DEV_ROW_REMAP_PENDING: 1 = remaps wait for a GPU reset"
    )
    clock_events = models.FloatField(
        null=True,
        help_text="DCGM_FI_DEV_CLOCKS_EVENT_REASONS: bitmask of DCGM_CLOCKS_EVENT_REASON_*",
    )

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"node {self.node_id} GPU {self.gpu} at {self.ts:%Y-%m-%d %H:%M:%S}"


class GpuSample(GpuRow):
    """Per-GPU hot values at one step (partitioned by day; written with COPY): the GPU
    samples that are not kept as step rows (``ingest.gpu_steps``), and older databases' rows."""

    class Meta:
        managed = False
        db_table = "ingest_gpusample"


class GpuHotSample(GpuRow):
    """Every hot GPU sample as a per-GPU row, read-only: per-GPU rows and split step rows
    (the view ``ingest_gpuhot``, ``ingest.gpu_steps``); compacted history is not in it."""

    class Meta:
        managed = False
        db_table = "ingest_gpuhot"


class GpuRollup(GpuValues):
    """Per-GPU 5-minute rollup starting at ``ts``: means of gauges/rates, sums of increases."""

    pk = models.CompositePrimaryKey("node_id", "gpu", "ts")
    ts = models.DateTimeField(help_text="start of the 5-minute bucket")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    gpu = models.SmallIntegerField()

    class Meta:
        managed = False
        db_table = "ingest_gpurollup"

    def __str__(self) -> str:
        return f"node {self.node_id} GPU {self.gpu} 5 min from {self.ts:%Y-%m-%d %H:%M}"


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


class IbRow(IbValues):
    """A port's values at one step, as every reader sees them (float8, encoded or decoded rows)."""

    pk = models.CompositePrimaryKey("port_id", "ts")
    ts = models.DateTimeField()
    port = models.ForeignKey(IbPort, on_delete=models.DO_NOTHING, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"port {self.port_id} at {self.ts:%Y-%m-%d %H:%M:%S}"


class IbSample(IbRow):
    """Per-IB-port hot values at one step as float8 (partitioned by day; written with COPY):
    the samples not kept encoded (``ingest.ib_encoded``), and older databases' rows."""

    class Meta:
        managed = False
        db_table = "ingest_ibsample"


class IbHotSample(IbRow):
    """Every hot IB sample, read-only: float8 rows and decoded encoded rows (the view
    ``ingest_ibhot``, ``ingest.ib_encoded``); compacted history is not in it."""

    class Meta:
        managed = False
        db_table = "ingest_ibhot"


class IbRollup(IbValues):
    """Per-port 5-minute rollup starting at ``ts`` (min of state, bitwise-or of saturated)."""

    pk = models.CompositePrimaryKey("port_id", "ts")
    ts = models.DateTimeField(help_text="start of the 5-minute bucket")
    port = models.ForeignKey(IbPort, on_delete=models.DO_NOTHING, db_constraint=False)
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)

    class Meta:
        managed = False
        db_table = "ingest_ibrollup"

    def __str__(self) -> str:
        return f"port {self.port_id} 5 min from {self.ts:%Y-%m-%d %H:%M}"


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

    def __str__(self) -> str:
        return f"node {self.node_id} 5 min from {self.ts:%Y-%m-%d %H:%M}"


class HeatmapTile(models.Model):
    """One node's hour of one heatmap metric: its twelve 5-minute cells, for 5-minute heatmaps.

    ``cells[k]`` is the node rollup value of the bucket at ``hour`` + 5 min × k, already
    rounded for display (4 significant digits), NULL where there is no value; bit k of
    ``mask`` says the node had data of the metric's family in that bucket (its value may
    still be NULL). A 24 h heatmap reads 25 of these per node, not 288 node rollup rows.
    """

    pk = models.CompositePrimaryKey("metric", "hour", "node_id")
    metric = models.CharField(
        max_length=32, help_text="key of ingest.heatmap_metrics.HEATMAP_METRICS"
    )
    hour = models.DateTimeField(help_text="start of the hour (UTC)")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    mask = models.SmallIntegerField(help_text="bit k: the node had data in bucket k")
    cells = ArrayField(models.FloatField(null=True), size=12, help_text="float8[12]")

    class Meta:
        managed = False
        db_table = "ingest_heatmaptile"

    def __str__(self) -> str:
        return f"{self.metric} of node {self.node_id}, hour from {self.hour:%Y-%m-%d %H:%M}"


class NodeTile(models.Model):
    """One GPU or IB device of a node over one hour: every rollup column of its 5-minute buckets.

    ``cells[k][c]`` is column c (``ingest.node_tiles.COLUMNS[family]``) of the bucket at
    ``hour`` + 5 min × k, NULL where there is no value; bit k of ``mask`` says the device
    had a rollup row in that bucket. An IB device's value is the mean over its ports. The
    node page's 6 h reads 7 of these per device, not 72 rollup rows.
    """

    pk = models.CompositePrimaryKey("node_id", "family", "hour", "device")
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    family = models.CharField(max_length=8, help_text='"gpu" or "ib"')
    hour = models.DateTimeField(help_text="start of the hour (UTC)")
    device = models.CharField(max_length=64, help_text='GPU index ("0") or IB device ("mlx5_0")')
    mask = models.SmallIntegerField(help_text="bit k: the device had data in bucket k")
    cells = ArrayField(ArrayField(models.FloatField(null=True)), help_text="float8[12][columns]")

    class Meta:
        managed = False
        db_table = "ingest_nodetile"

    def __str__(self) -> str:
        return f"{self.family} {self.device} of node {self.node_id}, hour from {self.hour:%Y-%m-%d %H:%M}"


class IbNodeStep(models.Model):
    """One node's IB throughput at one scrape step: tx + rx bytes/s over all its ports.

    Written by ``ingest.rollups`` with the rollups, for what alert rules compare node by
    node and step by step (stragglers, missing data): one row per node and step.
    """

    pk = models.CompositePrimaryKey("ts", "node_id")
    ts = models.DateTimeField()
    node = models.ForeignKey(Node, on_delete=models.DO_NOTHING, db_constraint=False)
    bytes = models.FloatField(help_text="tx + rx bytes/s summed over the node's ports")

    class Meta:
        managed = False
        db_table = "ingest_ibnodestep"

    def __str__(self) -> str:
        return f"node {self.node_id} IB at {self.ts:%Y-%m-%d %H:%M:%S}"
