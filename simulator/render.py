"""Rendering: one target's exposition at one instant, live (text format) or history (OpenMetrics)."""

from __future__ import annotations

import threading

from simulator.counters import PortModel, PortSample
from simulator.dialects import checkpoints, dcgm, ksm, kueue, node_ib, treydock
from simulator.exposition import Lines
from simulator.gpu import GpuModel
from simulator.model import Cluster, NodeState
from simulator.queues import QueueModel
from simulator.schedule import Checkpoint, Run
from simulator.spec import Dialect
from simulator.targets import Target, all_targets, exporter_pods


class Renderer:
    """Holds the per-cluster models and label caches; renders any target at any instant."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.options = dcgm.resolved_options(cluster.spec.exporters, cluster.spec.faults)
        self.gpus = GpuModel(cluster)
        self.ports = PortModel(cluster)
        self.queues = QueueModel(cluster)
        names = [n.name for n in cluster.nodes]
        self.targets = all_targets(cluster.spec, names)
        self.exporter_pods = exporter_pods(cluster.spec, names)
        # dcgm-exporter's Hostname: its pod's name unless the DaemonSet sets NODE_NAME.
        self.dcgm_hostnames = {
            pod.node: pod.name
            for pod in self.exporter_pods
            if pod.dialect == Dialect.DCGM and not self.options.dcgm_node_name
        }
        self.by_path = {t.path: t for t in self.targets}
        self._gpu_labels: dict[tuple[int, str | None], list[list[dcgm.Entity]]] = {}
        self.lock = threading.Lock()

    def is_up(self, target: Target, t: float) -> bool:
        """False while the target's node is down (its exporters do not answer)."""
        return target.node is None or self.cluster.is_up(self.cluster.node(target.node), t)

    def lines(
        self, target: Target, t: float, history: bool = False, keep: frozenset[str] | None = None
    ) -> list[str]:
        """The sample lines of one target (history: job/instance labels added, no headers).

        `keep` limits the output to those family names (None: all).
        """
        extra = target.extra_labels if history else ""
        lines = Lines(extra=extra, with_headers=not history, keep=keep)
        with self.lock:
            self._render(target, t, lines)
        return lines.out

    def _render(self, target: Target, t: float, lines: Lines) -> None:
        cluster = self.cluster
        if target.dialect == Dialect.DCGM:
            state = cluster.state(cluster.node(target.node or ""), t)
            samples = [self.gpus.sample(state, g) for g in range(cluster.spec.gpus_per_node)]
            dcgm.render(samples, self._labels(state), self.options, lines)
        elif target.dialect == Dialect.NODE_IB:
            state = cluster.state(cluster.node(target.node or ""), t)
            node_ib.render(self._port_samples(state), lines, self.options, state)
        elif target.dialect == Dialect.TREYDOCK:
            treydock.render(cluster.topology, self._fabric(t), lines, self.options)
        elif target.dialect == Dialect.KSM:
            ksm.render(
                [cluster.state(n, t) for n in cluster.nodes],
                lines,
                self.exporter_pods,
                self.options.ksm_reason_zeros,
            )
        elif target.dialect == Dialect.KUEUE:
            kueue.render([self.queues.status(q, t) for q in self.queues.queues()], lines)
        elif target.dialect == Dialect.CHECKPOINTS:
            checkpoints.render(self._checkpoints(t), lines)

    def _labels(self, state: NodeState) -> list[str]:
        pod = state.pod.name if state.pod and state.pod.phase == "Running" else None
        key = (state.node.index, pod)
        cached = self._gpu_labels.get(key)
        if cached is None:
            if len(self._gpu_labels) > 4 * len(self.cluster.nodes):
                self._gpu_labels.clear()
            gpus = range(self.cluster.spec.gpus_per_node)
            hostname = self.dcgm_hostnames.get(state.node.name)
            cached = self._gpu_labels[key] = [
                dcgm.gpu_labels(state, g, self.options, hostname) for g in gpus
            ]
        return cached

    def _port_samples(self, state: NodeState) -> list[PortSample]:
        return [self.ports.sample(state, p) for p in range(self.cluster.spec.gpus_per_node)]

    def _fabric(self, t: float) -> dict[str, list[PortSample]]:
        fabric = {}
        for node in self.cluster.nodes:
            state = self.cluster.state(node, t)
            if state.up:
                fabric[node.name] = self._port_samples(state)
        return fabric

    def _checkpoints(self, t: float) -> list[tuple[Run, Checkpoint]]:
        found = []
        for run in self.cluster.runs_at(t):
            checkpoint = run.last_checkpoint(t)
            if checkpoint is not None:
                found.append((run, checkpoint))
        return found


def renderer_for(cluster: Cluster) -> Renderer:
    """The cluster's renderer (created once and kept on the cluster)."""
    renderer = getattr(cluster, "_renderer", None)
    if renderer is None:
        renderer = Renderer(cluster)
        cluster._renderer = renderer  # type: ignore[attr-defined]
    return renderer


def render_target(cluster: Cluster, target: Target | str, t: float) -> str | None:
    """The live text exposition of a target (a Target or its path) at unix time t.

    Returns None when the target's node is down (the HTTP server answers 503 then).
    """
    renderer = renderer_for(cluster)
    if isinstance(target, str):
        target = renderer.by_path[target]
    if not renderer.is_up(target, t):
        return None
    return "\n".join(renderer.lines(target, t)) + "\n"


def render_all(cluster: Cluster, t: float) -> int:
    """Render every target once at t (what one full scrape costs); returns the byte count."""
    total = 0
    for target in renderer_for(cluster).targets:
        text = render_target(cluster, target, t)
        total += len(text) if text else 0
    return total
