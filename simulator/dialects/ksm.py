"""kube-state-metrics: pods (info, labels, phase, restarts) and nodes (taints, cordon, Ready)."""

from __future__ import annotations

from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str
from simulator.model import NodeState, Pod
from simulator.topology import TRAINING

POD_INFO = Family("kube_pod_info", GAUGE, "[STABLE] Information about pod.")
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
    ip = f"10.{state.node.index // 250}.{state.node.index % 250}"
    return label_str(
        _pod_key(pod)
        + [
            ("host_ip", f"{ip}.1"),
            ("pod_ip", f"{ip}.17"),
            ("node", state.node.name),
            ("created_by_kind", pod.owner_kind),
            ("created_by_name", pod.owner_name),
            ("priority_class", pod.priority_class),
            ("host_network", "false"),
        ]
    )


def _pod_labels(pod: Pod) -> str:
    pairs = _pod_key(pod)
    if pod.local_queue:
        pairs += [
            ("label_kueue_x_k8s_io_queue_name", pod.local_queue),
            ("label_job_name", pod.owner_name),
        ]
    else:
        pairs += [("label_app", pod.owner_name.rsplit("-", 1)[0])]
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


def render(states: list[NodeState], lines: Lines, reason_zeros: bool = False) -> None:
    """Write the cluster's kube-state-metrics exposition from every node's state."""
    pods = [(s, s.pod) for s in states if s.pod is not None]
    lines.family(POD_INFO)
    for state, pod in pods:
        lines.sample(POD_INFO.name, _pod_info(state, pod), "1")
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
