"""kube-state-metrics: pods (info, labels, phase, restarts) and nodes (info, taints, cordon, Ready).

Label sets as kube-state-metrics emits them (kubernetes/kube-state-metrics
internal/store/pod.go and node.go @ c92fe0c5, docs/metrics/workload/pod-metrics.md @ 96a6db87,
docs/metrics/cluster/node-metrics.md @ ca300481): ``kube_pod_info{namespace, pod, uid, host_ip,
pod_ip, node, created_by_kind, created_by_name, priority_class, host_network}`` — the per-node
exporters' DaemonSet pods included — and ``kube_node_info{node, …, internal_ip}``.
"""

from __future__ import annotations

import re

from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str
from simulator.model import NodeState, Pod
from simulator.targets import ExporterPod, node_ip, pod_ip
from simulator.topology import TRAINING

POD_INFO = Family("kube_pod_info", GAUGE, "[STABLE] Information about pod.")
NODE_INFO = Family("kube_node_info", GAUGE, "[STABLE] Information about a cluster node.")
POD_LABELS = Family(
    "kube_pod_labels", GAUGE, "[STABLE] Kubernetes labels converted to Prometheus labels."
)
POD_PHASE = Family("kube_pod_status_phase", GAUGE, "[STABLE] The pods current phase.")
POD_REASON = Family("kube_pod_status_reason", GAUGE, "The pod status reasons")
POD_START = Family("kube_pod_start_time", GAUGE, "[STABLE] Start time in unix timestamp for a pod.")
RESTARTS = Family(
    "kube_pod_container_status_restarts_total",
    COUNTER,
    "[STABLE] The number of container restarts per container.",
)
LAST_TERMINATED = Family(
    "kube_pod_container_status_last_terminated_reason",
    GAUGE,
    "Describes the last reason the container was in terminated state.",
)
TAINT = Family("kube_node_spec_taint", GAUGE, "[STABLE] The taint of a cluster node.")
UNSCHEDULABLE = Family(
    "kube_node_spec_unschedulable", GAUGE, "[STABLE] Whether a node can schedule new pods."
)
CONDITION = Family("kube_node_status_condition", GAUGE, "[STABLE] The condition of a cluster node.")
FAMILIES = [
    NODE_INFO,
    POD_INFO,
    POD_LABELS,
    POD_PHASE,
    POD_REASON,
    POD_START,
    RESTARTS,
    LAST_TERMINATED,
    TAINT,
    UNSCHEDULABLE,
    CONDITION,
]
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
#: kube-state-metrics internal/store/pod.go ``podStatusReasons`` (v2.19.0, v2.20.0).
POD_REASONS = (
    "Evicted",
    "NodeAffinity",
    "NodeLost",
    "PreemptionByScheduler",
    "SchedulingGated",
    "Shutdown",
    "TerminationByKubelet",
    "UnexpectedAdmissionError",
)
POOL_TAINT_KEY = "node-pool"


def _pod_key(pod: Pod) -> list[tuple[str, str]]:
    return [("namespace", pod.namespace), ("pod", pod.name), ("uid", pod.uid)]


def _pod_info(state: NodeState, pod: Pod) -> str:
    return label_str(
        _pod_key(pod)
        + [
            ("host_ip", node_ip(state.node.index)),
            ("pod_ip", pod_ip(state.node.index, 17)),
            ("node", state.node.name),
            ("created_by_kind", pod.owner_kind),
            ("created_by_name", pod.owner_name),
            ("priority_class", pod.priority_class),
            ("host_network", "false"),
        ]
    )


def prometheus_label(name: str) -> str:
    """A Kubernetes label as kube-state-metrics names it in kube_pod_labels: ``label_`` + the
    name with every character outside [a-zA-Z0-9_] turned into ``_`` (its sanitizeLabelName)."""
    return "label_" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _pod_labels(pod: Pod) -> str:
    pairs = _pod_key(pod)
    if pod.local_queue:
        pairs += [
            ("label_kueue_x_k8s_io_queue_name", pod.local_queue),
            ("label_job_name", pod.owner_name),
        ]
    else:
        pairs += [("label_app", pod.owner_name.rsplit("-", 1)[0])]
    pairs += [(prometheus_label(name), value) for name, value in pod.labels]
    return label_str(pairs)


def pod_reason(state: NodeState) -> str | None:
    """The status reason KSM reports for the node's pod: NodeLost while its node is down."""
    return "NodeLost" if state.pod is not None and not state.up else None


def _render_reasons(pods: list[tuple[NodeState, Pod]], zeros: bool, lines: Lines) -> None:
    """kube_pod_status_reason: v2.20.0 emits only the set reason (1); up to v2.19 every
    listed reason with 0 or 1 (``zeros``). Labels: namespace, pod, uid, reason."""
    lines.family(POD_REASON)
    for state, pod in pods:
        reason = pod_reason(state)
        for listed in POD_REASONS:
            if zeros or listed == reason:
                labels = label_str(_pod_key(pod) + [("reason", listed)])
                lines.sample(POD_REASON.name, labels, "1" if listed == reason else "0")


def _exporter_pod_info(pod: ExporterPod) -> str:
    return label_str(
        (
            ("namespace", pod.namespace),
            ("pod", pod.name),
            ("uid", pod.uid),
            ("host_ip", pod.host_ip),
            ("pod_ip", pod.pod_ip),
            ("node", pod.node),
            ("created_by_kind", "DaemonSet"),
            ("created_by_name", pod.daemonset),
            ("priority_class", "system-node-critical"),
            ("host_network", "true" if pod.host_network else "false"),
        )
    )


def _node_info(state: NodeState) -> str:
    index = state.node.index
    return label_str(
        (
            ("node", state.node.name),
            ("kernel_version", "5.15.0-105-generic"),
            ("os_image", "Ubuntu 22.04.4 LTS"),
            ("container_runtime_version", "containerd://1.7.13"),
            ("kubelet_version", "v1.29.4"),
            ("kubeproxy_version", "deprecated"),
            ("provider_id", ""),
            ("pod_cidr", f"10.{128 + index // 250}.{index % 250}.0/24"),
            ("system_uuid", f"{index:08x}-0000-4000-8000-000000000000"),
            ("internal_ip", node_ip(index)),
        )
    )


def render(
    states: list[NodeState],
    lines: Lines,
    exporter_pods: list[ExporterPod] | None = None,
    reason_zeros: bool = False,
) -> None:
    """Write the cluster's kube-state-metrics exposition from every node's state.

    ``exporter_pods``: the per-node exporters' DaemonSet pods (listed in kube_pod_info only:
    ingest reads them to map exporter pods and IPs to nodes). ``reason_zeros``: every
    kube_pod_status_reason with 0/1, as kube-state-metrics up to v2.19 writes them.
    """
    pods = [(s, s.pod) for s in states if s.pod is not None]
    lines.family(NODE_INFO)
    for state in states:
        lines.sample(NODE_INFO.name, _node_info(state), "1")
    lines.family(POD_INFO)
    for state, pod in pods:
        lines.sample(POD_INFO.name, _pod_info(state, pod), "1")
    for exporter in exporter_pods or ():
        lines.sample(POD_INFO.name, _exporter_pod_info(exporter), "1")
    lines.family(POD_LABELS)
    for _state, pod in pods:
        lines.sample(POD_LABELS.name, _pod_labels(pod), "1")
    lines.family(POD_PHASE)
    for _state, pod in pods:
        for phase in PHASES:
            lines.sample(
                POD_PHASE.name,
                label_str(_pod_key(pod) + [("phase", phase)]),
                "1" if pod.phase == phase else "0",
            )
    _render_reasons(pods, reason_zeros, lines)
    lines.family(POD_START)
    for _state, pod in pods:
        lines.sample(POD_START.name, label_str(_pod_key(pod)), big(pod.start))
    _render_containers([pod for _s, pod in pods], lines)
    _render_nodes(states, lines)


def _render_containers(pods: list[Pod], lines: Lines) -> None:
    lines.family(RESTARTS)
    for pod in pods:
        lines.sample(
            RESTARTS.name,
            label_str(_pod_key(pod) + [("container", pod.container)]),
            str(pod.restarts),
        )
    lines.family(LAST_TERMINATED)
    for pod in pods:
        if pod.restarts:
            labels = label_str(_pod_key(pod) + [("container", pod.container), ("reason", "Error")])
            lines.sample(LAST_TERMINATED.name, labels, "1")


def _render_nodes(states: list[NodeState], lines: Lines) -> None:
    lines.family(TAINT)
    for state in states:
        effect = "NoSchedule" if state.pool == TRAINING else "NoExecute"
        labels = (
            ("node", state.node.name),
            ("key", POOL_TAINT_KEY),
            ("value", state.pool),
            ("effect", effect),
        )
        lines.sample(TAINT.name, label_str(labels), "1")
    lines.family(UNSCHEDULABLE)
    for state in states:
        lines.sample(
            UNSCHEDULABLE.name, label_str((("node", state.node.name),)), "0" if state.up else "1"
        )
    lines.family(CONDITION)
    for state in states:
        for status in ("true", "false", "unknown"):
            value = (status == "true") if state.up else (status == "unknown")
            labels = (("node", state.node.name), ("condition", "Ready"), ("status", status))
            lines.sample(CONDITION.name, label_str(labels), "1" if value else "0")
