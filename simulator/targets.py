"""Scrape targets: each node's dcgm-exporter and node-exporter, plus the cluster-wide exporters.

The `job`/`instance` pairs are what Prometheus attaches; history files carry the same pairs so
backfilled and live series are the same series. On Kubernetes (``ExporterOptions.on_kubernetes``)
the per-node exporters are DaemonSet pods found by plain Kubernetes service discovery, so
`instance` is the scrape address, not a node name: node-exporter runs on the host network
(`<node IP>:9100`, kube-prometheus' nodeExporter-daemonset.yaml `hostNetwork: true`),
dcgm-exporter on the pod network (`<pod IP>:9400`). On bare metal targets are named by host.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from simulator.rng import unit
from simulator.spec import ClusterSpec, Dialect

JOBS = {
    Dialect.DCGM: "dcgm-exporter",
    Dialect.NODE_IB: "node-exporter",
    Dialect.TREYDOCK: "infiniband-exporter",
    Dialect.KSM: "kube-state-metrics",
    Dialect.KUEUE: "kueue",
    Dialect.CHECKPOINTS: "training-checkpoints",
}
PER_NODE_PORTS = {Dialect.DCGM: 9400, Dialect.NODE_IB: 9100}
#: (namespace, DaemonSet, hostNetwork) of the per-node exporters on Kubernetes: the GPU
#: Operator's dcgm-exporter and kube-prometheus' node-exporter.
DAEMONSETS = {
    Dialect.DCGM: ("gpu-operator", "nvidia-dcgm-exporter", False),
    Dialect.NODE_IB: ("monitoring", "node-exporter", True),
}
#: The characters of a generated pod-name suffix (k8s.io/apimachinery/pkg/util/rand).
POD_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
CLUSTER_INSTANCES = {
    Dialect.TREYDOCK: "infiniband-exporter:9315",
    Dialect.KSM: "kube-state-metrics:8080",
    Dialect.KUEUE: "kueue-controller-manager:8443",
    Dialect.CHECKPOINTS: "training-checkpoints:9091",
}


@dataclass(frozen=True)
class Target:
    """One scrape target the simulator serves at `path`."""

    job: str
    instance: str
    path: str
    dialect: str
    node: str | None = None

    @property
    def extra_labels(self) -> str:
        """The job/instance labels a history file must carry for this target."""
        from simulator.exposition import label_str

        return label_str((("job", self.job), ("instance", self.instance)))


def node_ip(index: int) -> str:
    """The InternalIP of node ``index`` (kube_node_info{internal_ip}; deterministic)."""
    return f"10.0.{index // 250}.{index % 250 + 1}"


def pod_ip(index: int, host: int) -> str:
    """Address ``host`` in node ``index``'s pod CIDR (10.<128 + i // 250>.<i % 250>.0/24)."""
    return f"10.{128 + index // 250}.{index % 250}.{host}"


@dataclass(frozen=True)
class ExporterPod:
    """A per-node exporter's pod as kube-state-metrics lists it (kube_pod_info)."""

    dialect: str
    namespace: str
    name: str
    uid: str
    daemonset: str
    node: str
    host_ip: str
    pod_ip: str
    host_network: bool


def exporter_pod(spec: ClusterSpec, dialect: str, index: int, node: str) -> ExporterPod:
    """The DaemonSet pod of ``dialect`` on node ``index`` (name ``<daemonset>-<5 chars>``)."""
    namespace, daemonset, host_network = DAEMONSETS[dialect]
    picks = (unit(spec.seed, "pod", dialect, index, k) for k in range(5))
    suffix = "".join(POD_SUFFIX_ALPHABET[int(p * len(POD_SUFFIX_ALPHABET))] for p in picks)
    h = f"{int(unit(spec.seed, 'uid', dialect, index) * 2**64):016x}{index:016x}"
    uid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    address = node_ip(index) if host_network else pod_ip(index, 9)
    return ExporterPod(
        dialect, namespace, f"{daemonset}-{suffix}", uid, daemonset, node, node_ip(index), address,
        host_network,
    )  # fmt: skip


def exporter_pods(spec: ClusterSpec, node_names: list[str]) -> list[ExporterPod]:
    """Every per-node exporter pod (none on bare metal), by dialect then node."""
    if not spec.exporters.on_kubernetes:
        return []
    return [
        exporter_pod(spec, dialect, index, name)
        for dialect in Dialect.ALL
        if dialect in DAEMONSETS and dialect in spec.exporters.dialects
        for index, name in enumerate(node_names)
    ]


def node_targets(spec: ClusterSpec, dialect: str, node_names: list[str]) -> list[Target]:
    """The per-node targets of one dialect (dcgm or node_ib); see the module docstring."""
    port = PER_NODE_PORTS[dialect]
    kubernetes = spec.exporters.on_kubernetes
    return [
        Target(
            JOBS[dialect],
            f"{exporter_pod(spec, dialect, index, name).pod_ip if kubernetes else name}:{port}",
            f"/metrics/{dialect}/{quote(name, safe='')}",
            dialect,
            name,
        )
        for index, name in enumerate(node_names)
    ]


def all_targets(spec: ClusterSpec, node_names: list[str]) -> list[Target]:
    """Every target for the spec's enabled dialects, in a stable order."""
    targets: list[Target] = []
    for dialect in Dialect.ALL:
        if dialect not in spec.exporters.dialects:
            continue
        if dialect in PER_NODE_PORTS:
            targets.extend(node_targets(spec, dialect, node_names))
        else:
            targets.append(
                Target(JOBS[dialect], CLUSTER_INSTANCES[dialect], f"/metrics/{dialect}", dialect)
            )
    return targets


def file_sd(targets: list[Target], address: str) -> list[dict[str, object]]:
    """Prometheus file_sd groups: one per target, all at `address`, told apart by metrics path."""
    return [
        {
            "targets": [address],
            "labels": {"job": t.job, "instance": t.instance, "__metrics_path__": t.path},
        }
        for t in targets
    ]


def write_file_sd(targets: list[Target], address: str, path: Path) -> Path:
    """Write the file_sd JSON atomically (Prometheus watches the file)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(file_sd(targets, address), indent=1))
    tmp.replace(path)
    return path


#: ``--scrape-interval`` names: a dialect, or ``ib`` for both InfiniBand exporters.
INTERVAL_ALIASES = {"ib": (Dialect.NODE_IB, Dialect.TREYDOCK), **{d: (d,) for d in Dialect.ALL}}
_DURATION = re.compile(r"^(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|s|m)?$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}


def duration_seconds(text: str) -> float:
    """``"15s"``, ``"2m"``, ``"500ms"`` or a bare number of seconds → seconds (> 0)."""
    match = _DURATION.match(text.strip())
    seconds = float(match["value"]) * _UNIT_SECONDS[match["unit"]] if match else 0.0
    if seconds <= 0:
        raise ValueError(f"bad scrape interval {text!r}: use e.g. 15s, 2m or 500ms")
    return seconds


def scrape_intervals(text: str, default: float) -> dict[str, float]:
    """Per dialect scrape interval (seconds) from ``"30s"`` or ``"dcgm=15s,ib=60s,30s"``.

    A bare duration sets every dialect not named; ``ib`` names both IB exporters.
    """
    intervals = dict.fromkeys(Dialect.ALL, default)
    named: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, _, value = item.rpartition("=")
        if not name:
            intervals = dict.fromkeys(Dialect.ALL, duration_seconds(value))
            continue
        if name.strip() not in INTERVAL_ALIASES:
            known = ", ".join(sorted(INTERVAL_ALIASES))
            raise ValueError(f"unknown exporter {name!r} in scrape interval (known: {known})")
        for dialect in INTERVAL_ALIASES[name.strip()]:
            named[dialect] = duration_seconds(value)
    return intervals | named


def _duration(seconds: float) -> str:
    return f"{seconds:g}s" if seconds >= 1 else f"{round(seconds * 1000)}ms"


def prometheus_config(file_sd_path: Path, scrape_interval: str = "15s") -> str:
    """A minimal prometheus.yml that scrapes the simulator through file_sd.

    ``scrape_interval`` as ``scrape_intervals`` reads it: one scrape job per distinct
    interval, each keeping the file_sd groups of its exporters' ``job`` labels.
    """
    intervals = scrape_intervals(scrape_interval, duration_seconds("15s"))
    by_interval: dict[float, list[str]] = {}
    for dialect, seconds in intervals.items():
        by_interval.setdefault(seconds, []).append(JOBS[dialect])
    fastest = _duration(min(by_interval))
    lines = [
        "global:",
        f"  scrape_interval: {fastest}",
        f"  evaluation_interval: {fastest}",
        "scrape_configs:",
    ]
    for seconds, jobs in sorted(by_interval.items()):
        every = _duration(seconds)
        lines += [
            f"  - job_name: simulator-{every}",
            f"    scrape_interval: {every}",
            f"    scrape_timeout: {_duration(min(seconds, 15.0))}",
            "    file_sd_configs:",
            f"      - files: ['{file_sd_path}']",
            "        refresh_interval: 5s",
            "    relabel_configs:",
            "      - source_labels: [job]",
            f"        regex: '{'|'.join(sorted(jobs))}'",
            "        action: keep",
        ]
    return "\n".join(lines) + "\n"
