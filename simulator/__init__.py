"""Cluster simulator: a deterministic GPU training cluster emitting real exporter dialects.

    from simulator import Cluster, ClusterSpec, Fault, scenario_faults, write_history, serving
    spec = ClusterSpec(nodes=64, seed=7, epoch=start)
    cluster = Cluster(replace(spec, faults=scenario_faults("tensor_drift", spec)))

See docs/simulator.md. Nothing here imports Django or the product's apps.
"""

from __future__ import annotations

from simulator.faults import Fault, FaultKind
from simulator.history import KEY_FAMILIES, HistoryStats, write_history
from simulator.model import Cluster
from simulator.render import render_all, render_target, renderer_for
from simulator.scenarios import SCENARIOS, scenario_faults, with_scenario
from simulator.server import SimulatorServer, serving
from simulator.spec import ClusterSpec, Dialect, ExporterOptions
from simulator.targets import Target, prometheus_config, write_file_sd

__all__ = [
    "KEY_FAMILIES",
    "SCENARIOS",
    "Cluster",
    "ClusterSpec",
    "Dialect",
    "ExporterOptions",
    "Fault",
    "FaultKind",
    "HistoryStats",
    "SimulatorServer",
    "Target",
    "prometheus_config",
    "render_all",
    "render_target",
    "renderer_for",
    "scenario_faults",
    "serving",
    "with_scenario",
    "write_file_sd",
    "write_history",
]
