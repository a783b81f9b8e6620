"""The plain data rules evaluate: rows read by ``ingest.selectors.rule_inputs``, and what rules return.

Times are unix seconds (floats): cheap to compare and subtract over a few
hundred thousand points. Every series row covers one ingest step ending at
``ts``; "increase" columns are counter increases over that step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ingest.selectors.rule_rows import (  # the rows ingest reads for the rules
    Assignment,
    FamilyCursor,
    GoneXid,
    GpuHealthPoint,
    GpuPoint,
    IbErrorPoint,
    IbPoint,
    IbPortInfo,
    KueuePoint,
    NodeThroughput,
    NvlinkPoint,
    RunCheckpoints,
    XidPoint,
)


class Detail(NamedTuple):
    """What a signal says at one step: captured as the alert's value, summary and context."""

    value: float | None
    summary: str
    context: dict[str, Any]
    severity: str | None = None  # overrides the rule's severity (gpu_xid application codes)


class Signal(NamedTuple):
    """A rule's condition over time for one scope.

    ``truth[i]`` says whether the condition held at ``times[i]``; a true point
    stays true for ``hold`` seconds unless a later point says otherwise (dense
    series: the gap tolerance; windowed counts: the window; synthesized
    intervals: ``math.inf``). ``labels`` are the scope (the fingerprint);
    ``extra`` are more labels captured when the alert opens (leaf_switch, run).
    """

    labels: dict[str, str]
    times: list[float]
    truth: list[bool]
    hold: float
    describe: Callable[[int], Detail]
    extra: dict[str, str] = {}


@dataclass
class EvaluationData:
    """Everything one evaluation reads, fetched with a few set-based queries."""

    now: float
    as_of: dict[str, float]
    max_gap: float
    step: float = 30.0
    gpu: list[GpuPoint] = field(default_factory=list)
    # (node id, GPU) of the GPU prefilter's candidates, when ``gpu`` is read in batches (backtests).
    gpu_keys: list[tuple[int, int]] = field(default_factory=list)
    nvlink: list[NvlinkPoint] = field(default_factory=list)
    ib: list[IbPoint] = field(default_factory=list)
    ib_errors: list[IbErrorPoint] = field(default_factory=list)
    xids: list[XidPoint] = field(default_factory=list)
    gpu_health: list[GpuHealthPoint] = field(default_factory=list)
    xid_gone: list[GoneXid] = field(default_factory=list)
    kueue: list[KueuePoint] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    runs: list[RunCheckpoints] = field(default_factory=list)
    leaf_switches: dict[tuple[str, str, int], str] = field(default_factory=dict)
    # Every known port (ib_congestion's peer groups); None → the ports of ``ib`` (tests).
    ib_ports: list[IbPortInfo] | None = None
    last_seen: dict[tuple[str, str], float] = field(default_factory=dict)
    # Shapes the selectors aggregate in SQL; None → derived from the dense points above (tests).
    throughput: list[NodeThroughput] | None = None
    sample_times: dict[tuple[str, str], list[float]] | None = None
    # Newest IB sample of the nodes with a non-active port sample; None → from the sample times.
    ib_last: dict[str, float] | None = None
    cursors: list[FamilyCursor] = field(default_factory=list)
    # Data time each windowed dataset starts at (``alerts.inputs.fetch``): where a condition that
    # already held at the first point was cut off by the look-back (``alerts.since``).
    window_starts: dict[str, float] = field(default_factory=dict)
    # Filled while rules run, for rules derived from others (ib_switch_fault).
    current: dict[str, list[Any]] = field(default_factory=dict)
    # node_sample_times per family, derived once: several rules read it.
    _times: dict[str, dict[str, list[float]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def node_throughput(self) -> list[NodeThroughput]:
        """Per node and step, tx + rx bytes/s over all its ports."""
        if self.throughput is not None:
            return self.throughput
        sums: dict[tuple[str, float], float] = {}
        for pt in self.ib:
            key = (pt.node, pt.ts)
            sums[key] = sums.get(key, 0.0) + (pt.tx_bytes or 0.0) + (pt.rx_bytes or 0.0)
        return [NodeThroughput(node, ts, value) for (node, ts), value in sums.items()]

    def port_inventory(self) -> list[IbPortInfo]:
        """Every known IB port with its leaf switch (fetched, else the ports of the dense rows)."""
        if self.ib_ports is not None:
            return self.ib_ports
        keys = sorted({(pt.node, pt.device, pt.port) for pt in self.ib})
        return [IbPortInfo(*key, self.leaf_switches.get(key, "")) for key in keys]

    def node_sample_times(self, family: str) -> dict[str, list[float]]:
        """Per node, the sorted distinct sample times of ``family`` ("gpu" or "ib") in the window."""
        if family not in self._times:
            self._times[family] = self._node_sample_times(family)
        return self._times[family]

    def last_ib_sample(self) -> dict[str, float]:
        """Per node, its newest IB sample in the window (fetched ones: the nodes with a port not active)."""
        if self.ib_last is not None:
            return self.ib_last
        return {node: times[-1] for node, times in self.node_sample_times("ib").items() if times}

    def _node_sample_times(self, family: str) -> dict[str, list[float]]:
        if self.sample_times is not None and any(fam == family for fam, _ in self.sample_times):
            return {node: t for (fam, node), t in self.sample_times.items() if fam == family}
        times: dict[str, set[float]] = {}
        if family == "ib" and self.throughput is not None:  # per-node sums are keyed by sample time
            for node, ts, _ in self.throughput:
                times.setdefault(node, set()).add(ts)
            return {node: sorted(seq) for node, seq in times.items()}
        for pt in self.gpu if family == "gpu" else self.ib if family == "ib" else []:
            times.setdefault(pt.node, set()).add(pt.ts)
        return {node: sorted(seq) for node, seq in times.items()}

    def as_of_family(self, family: str) -> float:
        """The data time of a family: how far ingest has covered it (else now)."""
        return self.as_of.get(family, self.now)
