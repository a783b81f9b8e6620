"""What each ingest family reads, per exporter dialect, and why a metric may be missing.

"Required" metrics are the ones the exporter emits by default and ingest stores;
"optional" ones are off by default in the exporter, appear only after a first
event, or only enrich what is stored (names: docs/domain.md, docs/dcgm.md, docs/infiniband.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .models import Family
from .normalize import HOST_CA_PATTERN
from .queries import DCGM_LEGACY_NAMES

GPU_LABELS = ("Hostname", "hostname", "node")
NODE_LABELS = ("node", "instance")


@dataclass(frozen=True)
class MetricSpec:
    """One metric a dialect provides; ``node_labels`` empty means "not per node"."""

    name: str
    required: bool = True
    node_labels: tuple[str, ...] = ()
    cause: str = ""
    fix: str = ""


@dataclass(frozen=True)
class DialectSpec:
    """One exporter dialect of a family, and what it means when none of it is there."""

    name: str
    metrics: tuple[MetricSpec, ...]
    absent_cause: str
    absent_fix: str


@dataclass(frozen=True)
class FamilySpec:
    """A family and its dialects (the first is the one to recommend when nothing is found)."""

    family: str
    title: str
    dialects: tuple[DialectSpec, ...] = field(default_factory=tuple)


PROF_CAUSE = (
    "DCGM_FI_PROF_* absent: the DCGM profiling module is not loaded (e.g. DCGM running without "
    "profiling support, another profiler such as Nsight holding the counters, or a GPU without "
    "profiling metrics), or the fields are commented out in the exporter's counters CSV "
    "(dcp-metrics-included.csv)."
)
PROF_FIX = (
    "Load the profiling module (run nv-hostengine / dcgm-exporter with profiling enabled, stop "
    "other profilers) and keep the DCGM_FI_PROF_* lines in the counters CSV passed with "
    "-f / DCGM_EXPORTER_COLLECTORS; restart dcgm-exporter."
)
OFF_BY_DEFAULT_CAUSE = "Off by default in dcgm-exporter: not listed in its counters CSV."
OFF_BY_DEFAULT_FIX = (
    "Add the field to the counters CSV (e.g. dcp-metrics-included.csv / default-counters.csv) "
    "and restart dcgm-exporter."
)


def legacy_dcgm_name(name: str) -> str:
    """The dcgm-exporter 1.x name of a field (``queries.DCGM_LEGACY_NAMES``, else lowercased)."""
    return DCGM_LEGACY_NAMES.get(name) or (
        name.lower() if "_PROF_" in name else "dcgm_" + name.removeprefix("DCGM_FI_DEV_").lower()
    )


def _dcgm(names: dict[str, bool], legacy: bool) -> tuple[MetricSpec, ...]:
    specs = []
    for name, required in names.items():
        prof = "_PROF_" in name
        cause = PROF_CAUSE if prof else ("" if required else OFF_BY_DEFAULT_CAUSE)
        fix = PROF_FIX if prof else ("" if required else OFF_BY_DEFAULT_FIX)
        shown = legacy_dcgm_name(name) if legacy else name
        specs.append(MetricSpec(shown, required, GPU_LABELS, cause, fix))
    return tuple(specs)


DCGM_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": True,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": True,
    "DCGM_FI_PROF_DRAM_ACTIVE": True,
    "DCGM_FI_DEV_POWER_USAGE": True,
    "DCGM_FI_DEV_GPU_TEMP": True,
    "DCGM_FI_DEV_XID_ERRORS": True,
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": True,
    "DCGM_FI_PROF_SM_ACTIVE": False,
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": False,
}
DCGM_ABSENT = (
    "No dcgm-exporter metrics: the exporter is not deployed (DaemonSet / GPU Operator "
    "dcgmExporter.enabled) or Prometheus does not scrape it.",
    "Deploy dcgm-exporter on the GPU nodes and add its ServiceMonitor / scrape job (port 9400).",
)

NODE_IB = "node_infiniband_"
_NODE_IB_COUNTERS = (
    "port_data_transmitted_bytes_total", "port_data_received_bytes_total",
    "port_packets_transmitted_total", "port_packets_received_total", "port_transmit_wait_total",
    "symbol_error_total", "link_error_recovery_total", "link_downed_total",
    "port_errors_received_total", "local_link_integrity_errors_total",
    "excessive_buffer_overrun_errors_total",
)  # fmt: skip
_TREYDOCK_COUNTERS = (
    "port_transmit_data_bytes_total", "port_receive_data_bytes_total",
    "port_transmit_packets_total", "port_receive_packets_total", "port_transmit_wait_total",
    "port_symbol_error_total", "port_link_downed_total", "port_link_error_recovery_total",
    "port_receive_errors_total", "port_local_link_integrity_errors_total",
    "port_excessive_buffer_overrun_errors_total",
)  # fmt: skip
#: treydock's HCA collector is off by default (collectors/hca.go: --collector.hca false).
HCA_COLLECTOR_CAUSE = (
    "treydock HCA collector disabled (--collector.hca): infiniband_exporter runs (its switch "
    "series are here) but its HCA collector is off by default, so there are no HCA port "
    "counters and no guid → node mapping."
)
HCA_COLLECTOR_FIX = (
    "Start infiniband_exporter with --collector.hca (and keep the switch collector)."
)
TREYDOCK_NO_STATE = (
    "treydock exports no HCA port state (no state/physical state series): ports seen only "
    "through treydock have state unknown (NULL), and link flaps are derived from link_downed "
    "increases alone."
)
IB_ABSENT = (
    "No InfiniBand metrics: the node_exporter infiniband collector is disabled "
    "(--no-collector.infiniband, or /sys/class/infiniband not mounted) and the treydock "
    "infiniband_exporter is not deployed. DCGM exports no IB counters.",
    "Enable node_exporter's infiniband collector (on by default; mount /sys) or deploy "
    "treydock/infiniband_exporter on one host with fabric access, and scrape it.",
)

KUEUE_ABSENT = (
    "No Kueue metrics: Kueue's metrics endpoint is not scraped.",
    "Enable metrics in Kueue's configuration (controller_manager_config.yaml: metrics.bindAddress; "
    "Helm: enablePrometheus=true) and deploy its ServiceMonitor / scrape job.",
)
LAZY_COUNTER = (
    "Kueue creates this counter at its first event: absent can also mean none happened yet.",
    "Nothing to do if no workload was evicted / preempted; otherwise check Kueue's scrape.",
)
KSM_ABSENT = (
    "No kube-state-metrics: it is not deployed or not scraped.",
    "Deploy kube-state-metrics (e.g. kube-prometheus-stack) and scrape it.",
)
CHECKPOINT_ABSENT = (
    "No checkpoint gauges: no standard exporter exists, so your training job must export them.",
    "Export training_last_checkpoint_timestamp_seconds / _step / _duration_seconds "
    "{namespace, job_name} from the job (or a Pushgateway), or push checkpoints to "
    "POST /api/v1/runs/<namespace>/<name>/checkpoints.",
)


def _kueue() -> tuple[MetricSpec, ...]:
    quota_fix = "Set enableClusterQueueResources: true in Kueue's metrics configuration."
    return (
        MetricSpec("kueue_pending_workloads"),
        MetricSpec("kueue_admitted_active_workloads"),
        MetricSpec("kueue_admitted_workloads_total"),
        MetricSpec("kueue_admission_wait_time_seconds_bucket"),
        MetricSpec("kueue_evicted_workloads_total", False, (), *LAZY_COUNTER),
        MetricSpec("kueue_preempted_workloads_total", False, (), *LAZY_COUNTER),
        MetricSpec("kueue_cluster_queue_status", False),
        MetricSpec(
            "kueue_cluster_queue_resource_usage",
            False,
            (),
            "Quota gauges are off by default.",
            quota_fix,
        ),
        MetricSpec(
            "kueue_cluster_queue_nominal_quota",
            False,
            (),
            "Quota gauges are off by default.",
            quota_fix,
        ),
    )


def _ksm_pods() -> tuple[MetricSpec, ...]:
    labels_fix = (
        "Start kube-state-metrics with --metric-labels-allowlist=pods=[kueue.x-k8s.io/queue-name].",
    )
    return (
        MetricSpec("kube_pod_info", True, ("node",)),
        MetricSpec("kube_pod_status_phase"),
        MetricSpec("kube_pod_container_status_restarts_total"),
        MetricSpec(
            "kube_pod_labels",
            False,
            (),
            "Pod labels are only exported when allowlisted.",
            labels_fix[0],
        ),
        MetricSpec("kube_pod_container_status_last_terminated_reason", False),
        MetricSpec("kube_pod_start_time", False),
    )


CATALOGUE: tuple[FamilySpec, ...] = (
    FamilySpec(Family.GPU, "GPU (dcgm-exporter)", (
        DialectSpec("dcgm-exporter", _dcgm(DCGM_FIELDS, legacy=False), *DCGM_ABSENT),
        DialectSpec("dcgm-exporter 1.x", _dcgm(DCGM_FIELDS, legacy=True), *DCGM_ABSENT),
    )),
    FamilySpec(Family.IB, "InfiniBand", (
        DialectSpec("node_exporter", tuple(
            [MetricSpec(NODE_IB + c, True, NODE_LABELS) for c in _NODE_IB_COUNTERS]
            + [MetricSpec(NODE_IB + "state_id", True, NODE_LABELS),
               MetricSpec(NODE_IB + "rate_bytes_per_second", True, NODE_LABELS),
               MetricSpec(NODE_IB + "physical_state_id", False, NODE_LABELS),
               MetricSpec(NODE_IB + "info", False, NODE_LABELS)]
        ), *IB_ABSENT),
        DialectSpec("treydock infiniband_exporter", tuple(
            [MetricSpec("infiniband_hca_" + c, True, (), HCA_COLLECTOR_CAUSE, HCA_COLLECTOR_FIX)
             for c in _TREYDOCK_COUNTERS]
            + [MetricSpec("infiniband_hca_info", True, (), HCA_COLLECTOR_CAUSE, HCA_COLLECTOR_FIX),
               MetricSpec("infiniband_hca_rate_bytes_per_second", False, (),
                          HCA_COLLECTOR_CAUSE, HCA_COLLECTOR_FIX),
               MetricSpec("infiniband_hca_uplink_info", False, (),
                          HCA_COLLECTOR_CAUSE, HCA_COLLECTOR_FIX)]
        ), *IB_ABSENT),
    )),
    FamilySpec(Family.TOPOLOGY, "IB topology", (
        DialectSpec("treydock infiniband_exporter", (
            MetricSpec("infiniband_switch_uplink_info"),
            MetricSpec("infiniband_switch_info", False),
        ), "No switch uplink info: the treydock infiniband_exporter with switch collection is not "
           "deployed (node_exporter cannot see the fabric).",
           "Deploy treydock/infiniband_exporter with --collector.switch and scrape it; until then "
           "nodes show no leaf switch."),
    )),
    FamilySpec(Family.KUEUE, "Kueue", (DialectSpec("kueue", _kueue(), *KUEUE_ABSENT),)),
    FamilySpec(Family.CLUSTER, "Cluster membership", (
        DialectSpec("kube-state-metrics", (
            MetricSpec("kube_node_spec_taint", True, ("node",)),
            MetricSpec("kube_node_spec_unschedulable", True, ("node",)),
            MetricSpec("kube_node_info", False, ("node",)),
            MetricSpec("kube_node_status_condition", False, ("node",)),
        ), *KSM_ABSENT),
    )),
    FamilySpec(Family.RUNS, "Runs (pods and jobs)", (
        DialectSpec("kube-state-metrics", _ksm_pods(), *KSM_ABSENT),
    )),
    FamilySpec(Family.CHECKPOINTS, "Checkpoints", (
        DialectSpec("training job gauges", (
            MetricSpec("training_last_checkpoint_timestamp_seconds"),
            MetricSpec("training_last_checkpoint_step"),
            MetricSpec("training_last_checkpoint_duration_seconds", False),
        ), *CHECKPOINT_ABSENT),
    )),
)  # fmt: skip


_IB_COUNTER_RE = "|".join(
    ["port_data_transmitted_bytes", "port_data_received_bytes", "port_packets_transmitted",
     "port_packets_received", "port_transmit_wait", "symbol_error", "link_downed",
     "link_error_recovery", "port_errors_received", "local_link_integrity_errors",
     "excessive_buffer_overrun_errors"]
)  # fmt: skip
_PORT = "instance, device, port"
_HOST_CA_PROMQL = HOST_CA_PATTERN.replace("\\", "\\\\")  # a PromQL string escapes backslashes
#: Facts (series counts) for the IB notes: CAs that are not host ports, devices with no counter.
IB_FACT_QUERIES = {
    "ib_non_host_cas": f'count(infiniband_hca_info{{hca!~"{_HOST_CA_PROMQL}"}})',
    "ib_no_counter_ports": (
        f"count(group by ({_PORT}) (node_infiniband_state_id) unless on ({_PORT}) "
        f'group by ({_PORT}) ({{__name__=~"node_infiniband_({_IB_COUNTER_RE})_total"}}))'
    ),
}


def ib_notes(
    names: set[str], facts: dict[str, int] | None = None
) -> tuple[list[str], tuple[str, str] | None]:
    """Notes on the IB family from the metric names and ``IB_FACT_QUERIES`` facts, and a
    (cause, fix) that overrides the family's when the cause is known better than "not deployed"."""
    facts = facts or {}
    node_exporter = NODE_IB + "port_data_transmitted_bytes_total" in names
    hca_counters = "infiniband_hca_port_transmit_data_bytes_total" in names
    switches_only = not hca_counters and "infiniband_switch_info" in names
    notes = []
    if node_exporter and hca_counters:
        notes.append(
            "Both node_exporter and treydock IB metrics are present: merged into one port model "
            "(per port and counter, node_exporter first; the rest from treydock)."
        )
    if hca_counters:
        notes.append(TREYDOCK_NO_STATE)
    if switches_only:
        notes.append(HCA_COLLECTOR_CAUSE + " " + HCA_COLLECTOR_FIX)
    if facts.get("ib_non_host_cas"):
        notes.append(
            f"{facts['ib_non_host_cas']} treydock CA(s) are not host ports (e.g. SHARP's "
            '"Mellanox Technologies Aggregation Node", or a node description that is neither '
            '"<host> HCA-<N>" nor "<host> mlx5_<N>"): skipped, never made nodes.'
        )
    if facts.get("ib_no_counter_ports"):
        notes.append(
            f"{facts['ib_no_counter_ports']} node_exporter RDMA port(s) report no IB counter "
            "(iWARP/irdma devices such as i40iw0): not IB ports, not stored or counted active."
        )
    override = (
        (HCA_COLLECTOR_CAUSE, HCA_COLLECTOR_FIX) if switches_only and not node_exporter else None
    )
    return notes, override
