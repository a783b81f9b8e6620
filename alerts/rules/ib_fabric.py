"""InfiniBand fabric rules: stragglers within a run, and leaf-switch faults (congestion: ib_congestion.py)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, Signal
from .series import Allocations, median_excluding


@register
class IbStraggler(BaseRule):
    """A node's IB throughput is far below the median of the other nodes of the same run.

    At each step, for each run spread over ≥ ``min_nodes`` nodes whose median
    throughput (tx + rx over all ports) is ≥ ``min_median_bytes_per_second``: a
    node below ``ratio_max`` × the median of the others is straggling. One slow
    node stalls every collective of the run.
    """

    id = "ib_straggler"
    needs = ("throughput", "assignments")
    family = Family.IB
    scope = ("node", "namespace", "run")
    severity = "warning"
    for_seconds = 300
    keep_firing_for_seconds = 120
    params = (
        Param(
            "ratio_max",
            float,
            0.5,
            "throughput ratio to the others' median below which a node straggles",
        ),
        Param("min_nodes", int, 3, "runs on fewer nodes are not judged"),
        Param(
            "min_median_bytes_per_second", float, 1.0e9, "runs moving less than this are not judged"
        ),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        runs = Allocations(data.assignments, data.max_gap)
        by_step: dict[tuple[float, str, str], list[tuple[float, str]]] = defaultdict(list)
        for node, ts, value in data.node_throughput():
            if node not in runs.by_node:  # most idle nodes: no run to compare with
                continue
            run = runs.at(node, ts)
            if run is not None:
                by_step[(ts, run.namespace, run.run)].append((value, node))
        series: dict[tuple[str, str, str], list[tuple[float, bool, float, float]]] = defaultdict(
            list
        )
        for (ts, namespace, run_name), nodes in by_step.items():
            if len(nodes) < p["min_nodes"]:
                continue
            nodes.sort()
            values = [value for value, _ in nodes]
            for index, (value, node) in enumerate(nodes):
                others = median_excluding(values, index)
                slow = (
                    others >= p["min_median_bytes_per_second"] and value < p["ratio_max"] * others
                )
                series[(node, namespace, run_name)].append((ts, slow, value, others))
        for (node, namespace, run_name), steps in series.items():
            steps.sort()
            truth = [slow for _, slow, _, _ in steps]
            if True not in truth:
                continue

            def describe(
                i: int, node: str = node, run_name: str = run_name, steps: list = steps
            ) -> Detail:
                _, _, value, others = steps[i]
                ratio = value / others if others else math.nan
                summary = (
                    f"IB straggler {node} in run {run_name}: {value / 1e9:.1f} GB/s, "
                    f"{ratio:.0%} of the others' median {others / 1e9:.1f} GB/s"
                )
                return Detail(ratio, summary, {"bytes_per_second": value, "median_others": others})

            labels = {"node": node, "namespace": namespace, "run": run_name}
            yield Signal(labels, [s[0] for s in steps], truth, data.max_gap, describe)


@register
class IbSwitchFault(BaseRule):
    """Many ports of one leaf switch fail together: the switch, not the nodes, is at fault.

    Derived from the current findings of ``source_rules``: when ≥ ``min_ports``
    ports on ≥ ``min_nodes`` nodes under one leaf switch hold the condition, one
    alert names the switch and its nodes, and it inhibits those ports' alerts.
    """

    id = "ib_switch_fault"
    needs = ()
    family = Family.IB
    scope = ("leaf_switch",)
    severity = "critical"
    keep_firing_for_seconds = 300
    params = (
        Param("min_ports", int, 4, "failing ports under one leaf that make a switch fault"),
        Param("min_nodes", int, 2, "distinct nodes among them"),
        Param("source_rules", list, ["ib_port_errors", "ib_link_flap"], "port rules that count"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        failing: dict[str, list] = defaultdict(list)
        for rule_id in p["source_rules"]:
            for finding in data.current.get(rule_id, ()):
                leaf = finding.extra.get("leaf_switch")
                if leaf and finding.state in ("pending", "firing"):
                    failing[leaf].append(finding)
        for leaf, findings in sorted(failing.items()):
            ports = sorted(
                {(f.labels["node"], f.labels["device"], f.labels["port"]) for f in findings}
            )
            nodes = sorted({node for node, _, _ in ports})
            if len(ports) < p["min_ports"] or len(nodes) < p["min_nodes"]:
                continue
            since = min(f.since for f in findings)

            def describe(
                i: int, leaf: str = leaf, ports: list = ports, nodes: list = nodes
            ) -> Detail:
                summary = f"Leaf switch {leaf}: {len(ports)} ports failing on {len(nodes)} nodes"
                context = {"nodes": nodes, "ports": [f"{n}/{d}:{p}" for n, d, p in ports]}
                return Detail(float(len(ports)), summary, context)

            yield Signal({"leaf_switch": leaf}, [since], [True], math.inf, describe)

    def lookback(self, settings: RuleSettings, max_gap: float) -> float:
        """Derived from other rules' findings: needs no data of its own."""
        return 0.0
