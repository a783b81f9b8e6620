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
    # dcgm-exporter -o with etc/1.x-compatibility-metrics.csv (dcgm_gpu_utilization, uuid, pod_name, ...).
    dcgm_legacy: bool = False
    # False simulates the DCGM profiling module not loaded: every DCGM_FI_PROF_* vanishes.
    dcgm_profiling: bool = True
    # Kubernetes pod mapping labels (pod, namespace, container) on GPU series.
    dcgm_pod_labels: bool = True
    # pod_uid on GPU series (dcgm-exporter --kubernetes-enable-pod-uid; off by default).
    dcgm_pod_uid: bool = False
    # The off-by-default NVLink error counters (users enable them in their CSV). None: on
    # when the scenario injects NVLink errors (its operators would have enabled them).
    dcgm_nvlink_errors: bool | None = None
    # The hardware-health fields beyond the CSV's defaults: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL (commented
    # out in it), DCGM_FI_DEV_ROW_REMAP_PENDING and DCGM_FI_DEV_CLOCKS_EVENT_REASONS, which clusters
    # that watch GPU health add to their CSV. False: the stock CSV (docs/dcgm.md "Hardware health").
    dcgm_health_fields: bool = True
    # The off-by-default profiling fields SM_ACTIVE, SM_OCCUPANCY, PIPE_FP16/32/64_ACTIVE.
    dcgm_extra_fields: bool = False
    # err_code / err_msg labels on every DCGM_FI_DEV_XID_ERRORS sample (dcgm-exporter 3.3.6-3.4.2+).
    dcgm_xid_labels: bool = True
    # MIG: each GPU is split into this many instances of this profile (GPU_I_PROFILE / GPU_I_ID).
    dcgm_mig_profile: str = ""
    dcgm_mig_instances: int = 0
    # kube-state-metrics up to v2.19 emits every kube_pod_status_reason with 0/1; v2.20 only the set one.
    ksm_reason_zeros: bool = False
    # --- InfiniBand (docs/infiniband.md) ---
    # treydock's --collector.hca. Upstream it is OFF by default (collectors/hca.go); on here so
    # the fabric view has HCA ports. False: only switch series (coverage names the flag).
    treydock_hca_collector: bool = True
    # HCA node descriptions: "rdma" = rdma-core's default "<host> mlx5_N", "mlnx" =
    # MLNX_OFED's "<host> HCA-<N+1>".
    treydock_hca_names: str = "rdma"
    # One SHARP "Mellanox Technologies Aggregation Node" CA per leaf group (not a host port).
    treydock_aggregation_node: bool = True
    # node_exporter: an iWARP RDMA device (i40iw0: info, state and rate, no counter at all).
    node_ib_iwarp_device: bool = True
    # node_exporter: a dual-port storage HCA (mlx5_<gpus>, ports 1 and 2) beside the rails.
    node_ib_dual_port_hca: bool = True
    # The dcgm-exporter DaemonSet sets NODE_NAME (from spec.nodeName): `Hostname` is the node's
    # name. Without it dcgm-exporter reports os.Hostname(), in a pod the pod's own name
    # (NVIDIA/dcgm-exporter internal/pkg/hostname/hostname.go).
    dcgm_node_name: bool = False
    # Exporters run as Kubernetes pods (DaemonSets) and are found by Kubernetes service
    # discovery: node-exporter's `instance` is `<node IP>:9100` (hostNetwork), dcgm-exporter's
    # `<pod IP>:9400`. None: when kube-state-metrics is among the dialects; False: bare metal
    # (static targets named by host, `Hostname` = the host's name).
    kubernetes: bool | None = None

    @property
    def on_kubernetes(self) -> bool:
        """Whether the exporters run as pods (see ``kubernetes``)."""
        return Dialect.KSM in self.dialects if self.kubernetes is None else self.kubernetes


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
    # Runs of these ClusterQueues are launched as JobSets (one replicated job "workers"): their
    # pods belong to the child Job <run>-workers-0 and carry jobset.sigs.k8s.io/jobset-name=<run>.
    jobset_queues: tuple[str, ...] = ()

    @property
    def epoch_seconds(self) -> float:
        """The epoch as unix seconds."""
        return self.epoch.timestamp()
