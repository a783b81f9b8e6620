"""Scrape targets: each node's dcgm-exporter and node-exporter, plus the cluster-wide exporters.

The `job`/`instance` pairs are what a kube-prometheus setup would attach; history files carry the
same pairs so backfilled and live series are the same series.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

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


def node_targets(dialect: str, node_names: list[str]) -> list[Target]:
    """The per-node targets of one dialect (dcgm or node_ib)."""
    port = PER_NODE_PORTS[dialect]
    return [
        Target(
            JOBS[dialect],
            f"{name}:{port}",
            f"/metrics/{dialect}/{quote(name, safe='')}",
            dialect,
            name,
        )
        for name in node_names
    ]


def all_targets(spec: ClusterSpec, node_names: list[str]) -> list[Target]:
    """Every target for the spec's enabled dialects, in a stable order."""
    targets: list[Target] = []
    for dialect in Dialect.ALL:
        if dialect not in spec.exporters.dialects:
            continue
        if dialect in PER_NODE_PORTS:
            targets.extend(node_targets(dialect, node_names))
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


def prometheus_config(file_sd_path: Path, scrape_interval: str = "15s") -> str:
    """A minimal prometheus.yml that scrapes the simulator through file_sd."""
    return (
        "global:\n"
        f"  scrape_interval: {scrape_interval}\n"
        f"  evaluation_interval: {scrape_interval}\n"
        "scrape_configs:\n"
        "  - job_name: simulator\n"
        f"    scrape_timeout: {scrape_interval}\n"
        "    file_sd_configs:\n"
        f"      - files: ['{file_sd_path}']\n"
        "        refresh_interval: 5s\n"
    )
