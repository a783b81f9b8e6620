"""What the alert rules read, as typed rows: times are unix seconds (floats).

Cheap to compare and subtract over a few hundred thousand points. Every series row covers
one ingest step ending at ``ts``; "increase" columns are counter increases over that step.
``rule_inputs`` returns them; ``alerts.rules.data`` names them for the rules.
"""

from __future__ import annotations

from typing import NamedTuple


class GpuPoint(NamedTuple):
    """Per-GPU gauges at one step (dense: every step of the look-back window)."""

    node: str
    gpu: int
    ts: float
    util: float | None
    tensor: float | None
    sm: float | None
    power: float | None


class NvlinkPoint(NamedTuple):
    """A step where a GPU's NVLink error counters increased (sparse)."""

    node: str
    gpu: int
    ts: float
    crc_flit: float
    crc_data: float


class IbPoint(NamedTuple):
    """Per-port throughput, wait and state at one step (dense)."""

    node: str
    device: str
    port: int
    ts: float
    tx_bytes: float | None
    rx_bytes: float | None
    xmit_wait: float | None
    state: int | None
    saturated: int
    rate: float | None = None  # link capacity, bytes/s (node_exporter's rate_bytes_per_second)


class IbPortInfo(NamedTuple):
    """A known IB port of a node and its leaf switch ("" when the topology is unknown)."""

    node: str
    device: str
    port: int
    leaf_switch: str


class IbErrorPoint(NamedTuple):
    """A step where a port's error counters increased or its state was not active (sparse)."""

    node: str
    device: str
    port: int
    ts: float
    symbol_errors: float
    rcv_errors: float
    local_link_integrity: float
    excessive_buffer_overrun: float
    link_downed: float
    link_error_recovery: float
    state: int | None


class XidPoint(NamedTuple):
    """A new or changed XID code on a GPU."""

    node: str
    gpu: int
    ts: float
    code: int
    message: str


class GpuHealthPoint(NamedTuple):
    """A step where a GPU reported a hardware-health problem (sparse: ``ingest.selectors.rule_sql.GPU_HEALTH``)."""

    node: str
    gpu: int
    ts: float
    ecc_dbe_vol: float  # volatile double-bit ECC errors since the GPU's last reset
    pcie_replay: float  # PCIe replays over the step
    row_remap_failure: float  # 1: row remapping failed
    row_remap_pending: float  # 1: remaps wait for a GPU reset
    clock_events: int  # DCGM_CLOCKS_EVENT_REASON_* bitmask


class GoneXid(NamedTuple):
    """A GPU's latest XID event when its code means the GPU is gone, and when it reported again."""

    node: str
    gpu: int
    ts: float
    code: int
    message: str
    returned: float | None  # the first GPU sample after an absence following the event


class KueuePoint(NamedTuple):
    """A ClusterQueue's pending and admitted workloads at one step."""

    cluster_queue: str
    ts: float
    pending_active: float | None
    pending_inadmissible: float | None
    admitted: float | None


class Assignment(NamedTuple):
    """A pod of a run held a node from ``start`` to ``end``."""

    node: str
    namespace: str
    pod: str
    run: str
    start: float
    end: float


class RunCheckpoints(NamedTuple):
    """A run, whether it is running, and the times of its checkpoints (ascending)."""

    namespace: str
    run: str
    running: bool
    checkpoints: tuple[float, ...]


class NodeThroughput(NamedTuple):
    """A node's IB throughput (tx + rx over all its ports) at one step."""

    node: str
    ts: float
    bytes_per_second: float


class FamilyCursor(NamedTuple):
    """How far an ingest family is covered, and when it last succeeded."""

    family: str
    covered_until: float
    last_success: float | None
