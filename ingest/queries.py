"""All PromQL that ingest runs, in one place, per family and dialect.

Settings can override any entry: ``INGEST_PROMQL_OVERRIDES`` maps
"family.dialect.name" to a PromQL string (env ``INGEST_PROMQL_OVERRIDES`` as JSON).
"""

from __future__ import annotations


# --- gpu / ib / topology (owned by the ingest-core work) --------------------
# ``{by}`` is replaced with the node-identity labels (INGEST_NODE_LABELS) plus
# ``instance``; ``max by`` collapses duplicate targets and drops pod labels.
# Counters are fetched as raw values at each step: ingest computes the exact
# increase over the step itself (resets, saturation at each counter's width) from
# consecutive values.
# Names: NVIDIA/dcgm-exporter etc/default-counters.csv and etc/1.x-compatibility-metrics.csv,
# go-dcgm pkg/dcgm/const_fields.go ``legacyDCGMFields`` (which 1.x names the exporter
# accepts); docs/dcgm.md lists every default field and what ingest does with it.
def _either(current: str, deprecated: str) -> str:
    """A field under its current or its deprecated name (one answers): ``(a or b)``, two
    named selectors, so a shard's matcher is added to both (``shards.scope``)."""
    return f"({current} or {deprecated})"


_DCGM_CURRENT = {
    "util": "DCGM_FI_DEV_GPU_UTIL",
    "tensor": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "sm": "DCGM_FI_PROF_SM_ACTIVE",
    "dram": "DCGM_FI_PROF_DRAM_ACTIVE",
    "power": "DCGM_FI_DEV_POWER_USAGE",
    "temp": "DCGM_FI_DEV_GPU_TEMP",
    # Typed counter by dcgm-exporter, but DCGM publishes a rate (MB/s): read as a gauge.
    "nvlink_bw": "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    "nvlink_tx": "DCGM_FI_PROF_NVLINK_TX_BYTES",
    "nvlink_rx": "DCGM_FI_PROF_NVLINK_RX_BYTES",
    "nvlink_crc_flit": "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "nvlink_crc_data": "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "nvlink_replay": "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "nvlink_recovery": "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "xid": "DCGM_FI_DEV_XID_ERRORS",
    # Hardware health (docs/dcgm.md "Hardware health"). The exporter names a series after the
    # CSV's field name and go-dcgm accepts both the current and the deprecated name of a field
    # (pkg/dcgm/const_fields.go dcgmFields / legacyDCGMFields), so either may be scraped.
    "ecc_dbe_vol": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "pcie_replay": _either("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL"),
    "row_remap_failure": _either("DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED"),
    "row_remap_pending": "DCGM_FI_DEV_ROW_REMAP_PENDING",
    "clock_events": _either(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
    ),
}
#: ``-o`` (DCGM_EXPORTER_USE_OLD_NAMESPACE) with the 1.x CSV. The PROF NVLink byte fields
#: have no 1.x name (the exporter refuses them), so the legacy dialect has no such column.
_DCGM_LEGACY = {
    "util": "dcgm_gpu_utilization",
    "tensor": "dcgm_fi_prof_pipe_tensor_active",
    "sm": "dcgm_fi_prof_sm_active",
    "dram": "dcgm_fi_prof_dram_active",
    "power": "dcgm_power_usage",
    "temp": "dcgm_gpu_temp",
    "nvlink_bw": "dcgm_nvlink_bandwidth_total",
    "nvlink_crc_flit": "dcgm_nvlink_flit_crc_error_count_total",
    "nvlink_crc_data": "dcgm_nvlink_data_crc_error_count_total",
    "nvlink_replay": "dcgm_nvlink_replay_error_count_total",
    "nvlink_recovery": "dcgm_nvlink_recovery_error_count_total",
    "xid": "dcgm_xid_errors",
    # The 1.x CSV names only these two of the health fields (commented out / on).
    "ecc_dbe_vol": "dcgm_ecc_dbe_volatile_total",
    "pcie_replay": "dcgm_pcie_replay_counter",
}
#: Metric names that identify each dialect (dialect detection and coverage).
DCGM_MARKERS = {"current": _DCGM_CURRENT["util"], "legacy": _DCGM_LEGACY["util"]}
#: Current field name → its 1.x name, for the fields both dialects have.
DCGM_LEGACY_NAMES = {
    _DCGM_CURRENT[column]: legacy
    for column, legacy in _DCGM_LEGACY.items()
    if not _DCGM_CURRENT[column].startswith("(")
}
#: The label dcgm-exporter puts the GPU's product name in (``modelName`` in both dialects).
DCGM_MODEL_LABEL = "modelName"


def _per_gpu(names: dict[str, str]) -> dict[str, str]:
    queries = {col: f"max by ({{by}}, gpu) ({metric})" for col, metric in names.items()}
    # The util series also keep modelName: it names each node's GPU model, no extra query.
    queries["util"] = f"max by ({{by}}, gpu, {DCGM_MODEL_LABEL}) ({names['util']})"
    # The XID message label (newer dcgm-exporter) is kept to name the event.
    queries["xid"] = f"max by ({{by}}, gpu, err_msg) ({names['xid']})"
    # When each node's exporter really sampled (ingest.sampling): one series per node.
    queries["sampled_at"] = f"max by ({{by}}) (timestamp({names['util']}))"
    return queries


GPU: dict[str, dict[str, str]] = {
    "current": _per_gpu(_DCGM_CURRENT),
    "legacy": _per_gpu(_DCGM_LEGACY),
}

_IB_NODE_EXPORTER = {
    "tx_bytes": "node_infiniband_port_data_transmitted_bytes_total",
    "rx_bytes": "node_infiniband_port_data_received_bytes_total",
    "tx_packets": "node_infiniband_port_packets_transmitted_total",
    "rx_packets": "node_infiniband_port_packets_received_total",
    "xmit_wait": "node_infiniband_port_transmit_wait_total",
    "symbol_errors": "node_infiniband_symbol_error_total",
    "link_downed": "node_infiniband_link_downed_total",
    "link_error_recovery": "node_infiniband_link_error_recovery_total",
    "rcv_errors": "node_infiniband_port_errors_received_total",
    "local_link_integrity": "node_infiniband_local_link_integrity_errors_total",
    "excessive_buffer_overrun": "node_infiniband_excessive_buffer_overrun_errors_total",
    "state": "node_infiniband_state_id",
    "phys_state": "node_infiniband_physical_state_id",
    "rate": "node_infiniband_rate_bytes_per_second",
}
_IB_TREYDOCK = {
    "tx_bytes": "infiniband_hca_port_transmit_data_bytes_total",
    "rx_bytes": "infiniband_hca_port_receive_data_bytes_total",
    "tx_packets": "infiniband_hca_port_transmit_packets_total",
    "rx_packets": "infiniband_hca_port_receive_packets_total",
    "xmit_wait": "infiniband_hca_port_transmit_wait_total",
    "symbol_errors": "infiniband_hca_port_symbol_error_total",
    "link_downed": "infiniband_hca_port_link_downed_total",
    "link_error_recovery": "infiniband_hca_port_link_error_recovery_total",
    "rcv_errors": "infiniband_hca_port_receive_errors_total",
    "local_link_integrity": "infiniband_hca_port_local_link_integrity_errors_total",
    "excessive_buffer_overrun": "infiniband_hca_port_excessive_buffer_overrun_errors_total",
}
IB_MARKERS = {"node_exporter": _IB_NODE_EXPORTER["tx_bytes"], "treydock": _IB_TREYDOCK["tx_bytes"]}
IB: dict[str, dict[str, str]] = {
    "node_exporter": {
        **{c: f"max by ({{by}}, device, port) ({m})" for c, m in _IB_NODE_EXPORTER.items()},
        # When each node's node_exporter was really scraped (ingest.sampling).
        "sampled_at": f"max by ({{by}}) (timestamp({_IB_NODE_EXPORTER['tx_bytes']}))",
    },
    # treydock (collectors/hca.go): no HCA port state series at all; the rate is per CA
    # (``infiniband_hca_rate_bytes_per_second{guid}``), spread here to each port of the guid.
    "treydock": {
        **{c: f"max by (guid, port) ({m})" for c, m in _IB_TREYDOCK.items()},
        "rate": (
            f"max by (guid, port) (0 * {_IB_TREYDOCK['tx_bytes']} + on (guid) group_left () "
            "max by (guid) (infiniband_hca_rate_bytes_per_second))"
        ),
        # When each HCA's counters were really read (one treydock scrape reads the fabric).
        "sampled_at": f"max by (guid) (timestamp({_IB_TREYDOCK['tx_bytes']}))",
        # guid -> "gpu-017 HCA-1" / "worker20 mlx5_3", over the window so a port seen early maps.
        "hca_info": "max by (guid, hca) (last_over_time(infiniband_hca_info[{range}]))",
    },
}
TOPOLOGY: dict[str, dict[str, str]] = {
    "treydock": {
        "uplinks": "max by (guid, port, switch, uplink, uplink_guid, uplink_type, uplink_port) "
        "(last_over_time(infiniband_switch_uplink_info[{range}]))",
        # The HCA side (HCA collector only): guid/port = the HCA's, uplink = its leaf switch.
        "hca_uplinks": "max by (guid, port, hca, uplink, uplink_guid, uplink_type, uplink_port) "
        "(last_over_time(infiniband_hca_uplink_info[{range}]))",
        "switches": "max by (guid, switch) (last_over_time(infiniband_switch_info[{range}]))",
    },
}


def promql(family: str, dialect: str, name: str, **params: str) -> str:
    """The PromQL for ``family.dialect.name`` (INGEST_PROMQL_OVERRIDES first), formatted."""
    from django.conf import settings

    table = {"gpu": GPU, "ib": IB, "topology": TOPOLOGY}[family]
    template = getattr(settings, "INGEST_PROMQL_OVERRIDES", {}).get(
        f"{family}.{dialect}.{name}", table[dialect][name]
    )
    return template.format(**params)


# --- kueue / cluster / runs / checkpoints (owned by the cluster-families work)
# One dialect each ("default"). Every query is a range query over the window,
# starting one step early: that first point is the baseline that counter
# increases and state changes are computed against (in Python, exactly, with
# counter resets handled), so no query uses rate()/increase() extrapolation.
# Kueue: followers of an HA deployment export stale values; `!="follower"`
# keeps the leader and matches versions without the `replica_role` label.
_KQ = '{replica_role!="follower"}'
# Pods of training workloads, by their controller (kube_pod_info's created_by_kind, the kind of the
# pod's controller ownerReference, as kube_pod_owner{owner_is_controller="true"} reports it): batch
# Jobs (JobSet's child Jobs, MPIJob launchers too), the Kubeflow training operators' own kinds,
# KubeRay's RayCluster, LeaderWorkerSet's StatefulSets (docs/runs.md, "Which pods are runs").
_WORKLOAD_KINDS = "Job|PyTorchJob|MPIJob|TFJob|XGBoostJob|PaddleJob|JAXJob|RayCluster|StatefulSet"
_JOB_POD = f'kube_pod_info{{created_by_kind=~"{_WORKLOAD_KINDS}"}}'
KUEUE: dict[str, dict[str, str]] = {
    "default": {
        "pending": f"max by (cluster_queue, status) (kueue_pending_workloads{_KQ})",
        "admitted_active": f"max by (cluster_queue) (kueue_admitted_active_workloads{_KQ})",
        "admitted_total": f"sum by (cluster_queue) (kueue_admitted_workloads_total{_KQ})",
        "wait_buckets": f"sum by (cluster_queue, le) (kueue_admission_wait_time_seconds_bucket{_KQ})",
        "evicted_total": f"sum by (cluster_queue, reason) (kueue_evicted_workloads_total{_KQ})",
        "preempted_total": (
            f"sum by (preempting_cluster_queue, reason) (kueue_preempted_workloads_total{_KQ})"
        ),
        "quota_usage": (
            "max by (cohort, cluster_queue, flavor, resource) "
            f"(kueue_cluster_queue_resource_usage{_KQ})"
        ),
        "quota_nominal": (
            "max by (cohort, cluster_queue, flavor, resource) "
            f"(kueue_cluster_queue_nominal_quota{_KQ})"
        ),
    }
}
CLUSTER: dict[str, dict[str, str]] = {
    "default": {
        "node_info": "max by (node) (kube_node_info)",
        # The value is the sample's own time: a taint that was removed lingers for the
        # lookback (5 min) where there are no staleness markers (backfilled blocks, a
        # restarted Prometheus); only the taints of the node's newest scrape count.
        "taints": "max by (node, key, value) (timestamp(kube_node_spec_taint))",
        "unschedulable": "max by (node) (kube_node_spec_unschedulable)",
    }
}
#: kube_pod_labels names of the controller labels that name a pod's top-level workload.
WORKLOAD_LABELS = (
    "label_jobset_sigs_k8s_io_jobset_name",  # jobset.sigs.k8s.io/jobset-name
    "label_training_kubeflow_org_job_name",  # training.kubeflow.org/job-name
    "label_ray_io_originated_from_cr_name",  # ray.io/originated-from-cr-name (RayJob, RayService)
    "label_ray_io_originated_from_crd",  # ray.io/originated-from-crd
    "label_ray_io_cluster",  # ray.io/cluster
    "label_leaderworkerset_sigs_k8s_io_name",  # leaderworkerset.sigs.k8s.io/name
)
RUNS: dict[str, dict[str, str]] = {
    "default": {
        "pod_info": f"max by (namespace, pod, node, created_by_kind, created_by_name) ({_JOB_POD})",
        # The controllers' labels naming the top-level workload (kube-state-metrics exports them
        # with --metric-labels-allowlist=pods=[...]; see docs/runs.md).
        "pod_workload": (
            f"max by (namespace, pod, {', '.join(WORKLOAD_LABELS)}) (kube_pod_labels) "
            f"and on (namespace, pod) {_JOB_POD}"
        ),
        "pod_queue": (
            "max by (namespace, pod, label_kueue_x_k8s_io_queue_name) "
            '(kube_pod_labels{label_kueue_x_k8s_io_queue_name!=""})'
        ),
        "pod_phase": (
            "max by (namespace, pod, phase) (kube_pod_status_phase == 1) "
            f"and on (namespace, pod) {_JOB_POD}"
        ),
        "pod_restarts": (
            "sum by (namespace, pod) (kube_pod_container_status_restarts_total) "
            f"and on (namespace, pod) {_JOB_POD}"
        ),
        "pod_reason": (
            "max by (namespace, pod, reason) (kube_pod_status_reason == 1) "
            f"and on (namespace, pod) {_JOB_POD}"
        ),
        "pod_terminated": (
            "max by (namespace, pod, reason) "
            "(kube_pod_container_status_last_terminated_reason == 1) "
            f"and on (namespace, pod) {_JOB_POD}"
        ),
    }
}
CHECKPOINTS: dict[str, dict[str, str]] = {
    "default": {
        "timestamp": "max by (namespace, job_name) (training_last_checkpoint_timestamp_seconds)",
        "step": "max by (namespace, job_name) (training_last_checkpoint_step)",
        "duration": "max by (namespace, job_name) (training_last_checkpoint_duration_seconds)",
    }
}
#: Node identity (``ingest.identity``): which nodes exist and the exporter pods on them, over
#: the window (``{range}``). Exporters run as DaemonSets (dcgm-exporter, node-exporter).
IDENTITY: dict[str, dict[str, str]] = {
    "default": {
        "nodes": "max by (node, internal_ip) (last_over_time(kube_node_info[{range}]))",
        "pods": (
            "max by (namespace, pod, node, host_ip, pod_ip, host_network) "
            '(last_over_time(kube_pod_info{created_by_kind="DaemonSet"}[{range}]))'
        ),
    }
}
