"""What to simulate: cluster shape, seed, epoch, faults, and which exporter dialects to emit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from simulator.faults import Fault


class Dialect:
    """Exporter dialects the simulator can emit (one module each under simulator/dialects)."""

    DCGM = "dcgm"
    NODE_IB = "node_ib"
    TREYDOCK = "treydock"
    KSM = "ksm"
    KUEUE = "kueue"
    CHECKPOINTS = "checkpoints"

    ALL: tuple[str, ...] = (DCGM, NODE_IB, TREYDOCK, KSM, KUEUE, CHECKPOINTS)


@dataclass(frozen=True)
class ExporterOptions:
    """Switches for the exporter dialects (mirrors the real exporters' options)."""

    dialects: frozenset[str] = frozenset(Dialect.ALL)
    # dcgm-exporter: "Hostname" in released versions, "hostname" after the 2026-05 rename.
    dcgm_node_label: str = "Hostname"
    # dcgm-exporter 1.x metric and label names (dcgm_gpu_utilization, uuid, pod_name, ...).
    dcgm_legacy: bool = False
    # False simulates the DCGM profiling module not loaded: every DCGM_FI_PROF_* vanishes.
    dcgm_profiling: bool = True
    # Kubernetes pod mapping labels (pod, namespace, container) on GPU series.
    dcgm_pod_labels: bool = True
    # The off-by-default NVLink error counters (users enable them in their CSV).
    dcgm_nvlink_errors: bool = True
    # err_code / err_msg labels on DCGM_FI_DEV_XID_ERRORS (newer dcgm-exporter versions).
    dcgm_xid_labels: bool = False


def default_epoch() -> datetime:
    """The current UTC time floored to the hour: the default anchor for relative fault times."""
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster to simulate. The model is a pure function of (spec, time)."""

    nodes: int = 64
    seed: int = 0
    # Anchor for fault times given as offsets (timedelta or seconds).
    epoch: datetime = field(default_factory=default_epoch)
    faults: Sequence[Fault] = ()
    inference_fraction: float = 0.25
    nodes_per_leaf: int = 32
    gpus_per_node: int = 8
    # Bytes/s per IB port of every run while it works; None: each run draws 12-30 GB/s.
    run_bandwidth: float | None = None
    # Seconds from a cycle's start (its workload queued) to its admission; None: drawn per cycle,
    # 60 s up to 30 % of the cycle (a workload then waits while its slot's nodes are free).
    admission_gap_seconds: float | None = None
    exporters: ExporterOptions = field(default_factory=ExporterOptions)
    # When set, the last node's name and slot 0's job names carry this string (XSS tests).
    hostile_label: str | None = None

    @property
    def epoch_seconds(self) -> float:
        """The epoch as unix seconds."""
        return self.epoch.timestamp()
