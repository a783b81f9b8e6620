"""IB congestion in real units: the share of a link's bandwidth lost to waiting, judged against peers.

PortXmitWait counts the ticks a port had data to send and no credits to send it
(IBA PortCounters). NVIDIA's ibdiagnet manual ("Congestion assessment on
InfiniBand links") converts it to bandwidth: lost bytes = increments × (tick+1)
(× lanes on Switch-IB generations). So, per port and step,

    lost share = xmit_wait increments/s × ``bytes_per_wait_increment`` ÷ port rate (bytes/s).

Busy links always wait a little, and evenly: a share is only congestion when it
stands out from its peers. At each step, for groups (the ports under one leaf
switch; the ports of one run's nodes) and for single ports:

- a group *waits together* when ≥ ``group_fraction`` of its ports have a share
  ≥ ``lost_share_min`` and its (upper) median share is ≥ ``peer_ratio_min`` × the
  median of the busy ports outside it; it raises ONE alert at its scope
  (``leaf_switch``, or ``namespace``/``run``) and its ports raise none. A leaf
  whose waiting ports all belong to such runs reaching beyond it is the runs'
  doing; a run lying wholly under waiting leaves is the leaves' doing.
- a port is congested when its share is ≥ ``lost_share_min`` and ≥
  ``peer_ratio_min`` × the median of its peers: the other ports of its run, else
  of its leaf switch, else the busy ports of the fabric.

Medians are upper medians over every known port, and ports fetched below
``lost_share_min / peer_ratio_min`` (the prefilter) count as 0: that changes no
comparison, since such a median stays below the level where it could matter.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, IbPoint, Signal
from .ib import PORT_KEY, port_labels
from .series import group

#: Quantum, Quantum-2, Quantum-3 (and current ConnectX): one increment per 8 bytes, tick = 7.
QUANTUM_BYTES_PER_WAIT_INCREMENT = 8.0
Key = tuple[str, str, int]
Group = tuple[str, ...]  # ("leaf", name) or ("run", namespace, run)


def lost_share(pt: IbPoint, bytes_per_increment: float) -> float | None:
    """The share of the port's bandwidth lost to waiting at this step (None: wait or rate unknown)."""
    if pt.xmit_wait is None or not pt.rate or pt.rate <= 0:
        return None
    return pt.xmit_wait * bytes_per_increment / pt.rate


def upper_median(total: int, known: Iterable[float]) -> float:
    """The upper median of ``total`` values: ``known`` ones, the rest 0 (censored)."""
    values = sorted(known)
    rank = total // 2  # index of the upper median among all values, ascending
    zeros = total - len(values)
    return 0.0 if rank < zeros else values[rank - zeros]


@dataclass
class Step:
    """One step: shares ≥ the candidate level, the groups its waiting ports touch, verdicts."""

    shares: dict[Key, float]
    busy_nodes: set[str]  # nodes running a run (every present node when no run is known)
    busy_ports: int
    members: dict[Group, list[Key]] = field(default_factory=dict)
    raised: dict[Group, tuple[float, int, int, float]] = field(default_factory=dict)
    ports: dict[Key, tuple[float, float]] = field(default_factory=dict)

    def baseline(self, excluded: Iterable[Key]) -> tuple[int, float]:
        """(count, upper median share) of the busy ports outside ``excluded``."""
        out = set(excluded)
        inside = sum(1 for k in out if k[0] in self.busy_nodes)
        known = [v for k, v in self.shares.items() if k[0] in self.busy_nodes and k not in out]
        count = self.busy_ports - inside
        return count, upper_median(count, known) if count > 0 else 0.0


@register
class IbCongestion(BaseRule):
    """A port, a leaf switch or a run loses bandwidth to waiting (PortXmitWait) far more than its peers.

    Share lost = xmit_wait/s × ``bytes_per_wait_increment`` (8: NVIDIA Quantum
    family) ÷ the port's rate. It fires after ``for`` = 5 min of a share ≥
    ``lost_share_min`` (2 %) that is ≥ ``peer_ratio_min`` (4) × its peers'
    median; a whole leaf switch or run waiting together is one alert at that scope.
    """

    id = "ib_congestion"
    needs = ("ib", "throughput", "assignments", "ib_ports")
    family = "ib"
    scope = ("node", "device", "port")  # or ("leaf_switch",), or ("namespace", "run")
    severity = "warning"
    for_seconds = 300
    keep_firing_for_seconds = 120
    params = (
        Param(
            "bytes_per_wait_increment",
            float,
            QUANTUM_BYTES_PER_WAIT_INCREMENT,
            "bytes lost per xmit_wait increment: tick+1 (8 on Quantum/ConnectX-6+; 32 × lanes on Switch-IB)",
        ),
        Param(
            "lost_share_min",
            float,
            0.02,
            "share of the link's bandwidth lost (0..1) that may be congestion",
        ),
        Param("peer_ratio_min", float, 4.0, "how many times its peers' median share it must lose"),
        Param(
            "group_fraction",
            float,
            0.75,
            "share of a leaf's or run's ports waiting for a group alert",
        ),
        Param("min_peers", int, 4, "fewest peer ports to judge against"),
    )

    def prefilter(self, settings: RuleSettings) -> dict[str, tuple[str, list[Any]]]:
        """Ports that lost at least lost_share_min / peer_ratio_min of their rate at some step.

        The coefficient is written into the SQL (not bound) so that, with the default
        params, the text equals the partial index ingest_ibsample_wait_ts (ingest 0009).
        """
        return {"ib": (f"xmit_wait >= {_coefficient(settings.params)!r} * rate", [])}

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        floor = p["lost_share_min"] / p["peer_ratio_min"]
        series = _candidates(data.ib, p["bytes_per_wait_increment"], floor)
        if not series:
            return
        by_ts: dict[float, dict[Key, float]] = defaultdict(dict)
        for key, (points, shares) in series.items():
            for pt, share in zip(points, shares, strict=True):
                if share is not None and share >= floor:
                    by_ts[pt.ts][key] = share
        judged = _Judge(data, p).run(by_ts)
        yield from _port_signals(data, series, judged)
        yield from _group_signals(data, judged)


def _coefficient(params: dict[str, Any]) -> float:
    """xmit_wait/s per byte/s of rate at the candidate level (0.000625 with the defaults)."""
    return params["lost_share_min"] / params["peer_ratio_min"] / params["bytes_per_wait_increment"]


def _candidates(
    points: list[IbPoint], bytes_per_increment: float, floor: float
) -> dict[Key, tuple[list[IbPoint], list[float | None]]]:
    """Per port with a share ≥ ``floor`` at some step: its points and shares."""
    found = {}
    for key, rows in group(points, PORT_KEY):
        shares = [lost_share(pt, bytes_per_increment) for pt in rows]
        if any(s is not None and s >= floor for s in shares):
            found[key] = (rows, shares)
    return found


class _Judge:
    """Per step: the peer groups of the waiting ports, which groups wait together, which ports stand out.

    Only the groups a waiting port belongs to are built; the busy ports outside a group are
    counted, not listed: a step costs its candidates and their groups, not the fabric.
    """

    def __init__(self, data: EvaluationData, params: dict[str, Any]) -> None:
        self.p = params
        self.ports_of: dict[str, list[Key]] = defaultdict(list)
        self.leaf_of: dict[Key, str] = {}
        self.leaf_members: dict[str, list[Key]] = defaultdict(list)
        for info in data.port_inventory():
            key = (info.node, info.device, info.port)
            self.ports_of[info.node].append(key)
            if info.leaf_switch:
                self.leaf_of[key] = info.leaf_switch
                self.leaf_members[info.leaf_switch].append(key)
        self.assignments = sorted(data.assignments, key=lambda a: a.start)
        self.tolerance = data.max_gap
        self.times = data.node_sample_times("ib")

    def run(self, by_ts: dict[float, dict[Key, float]]) -> dict[float, Step]:
        """Each step with a candidate, judged."""
        steps = sorted(by_ts)
        present: dict[float, set[str]] = {ts: {k[0] for k in by_ts[ts]} for ts in steps}
        for node, times in self.times.items():
            for ts in times:
                if ts in present:
                    present[ts].add(node)
        held = self._held(steps, present)
        return {ts: self._judge(by_ts[ts], present[ts], held[ts]) for ts in steps}

    def _held(self, steps: list[float], present: dict[float, set[str]]) -> dict[float, dict]:
        """Per step, the run each present node holds (the latest-starting assignment covering it)."""
        held: dict[float, dict[str, tuple[str, str]]] = {ts: {} for ts in steps}
        for a in self.assignments:  # ascending start: a later start overrides
            lo = bisect_left(steps, a.start - self.tolerance)
            for ts in steps[lo : bisect_right(steps, a.end + self.tolerance)]:
                if a.node in present[ts]:
                    held[ts][a.node] = (a.namespace, a.run)
        return held

    def _judge(self, shares: dict[Key, float], present: set[str], held: dict) -> Step:
        busy = set(held) or present  # no run known: every present port is a peer
        step = Step(shares, busy, sum(len(self.ports_of.get(n, ())) for n in busy))
        by_run: dict[tuple[str, str], list[str]] = defaultdict(list)
        for node, run in held.items():
            by_run[run].append(node)
        for key in self._waiting(step):
            if key in self.leaf_of:
                leaf = self.leaf_of[key]
                keys = [k for k in self.leaf_members[leaf] if k[0] in present]
                step.members[("leaf", leaf)] = keys
            if key[0] in held:
                run = held[key[0]]
                keys = [k for node in by_run[run] for k in self.ports_of.get(node, ())]
                step.members[("run", *run)] = keys
        self._groups(step)
        self._ports(step, held)
        return step

    def _groups(self, step: Step) -> None:
        """Groups that wait together and stand out, after the leaf/run attribution."""
        p, waiting = self.p, self._waiting(step)
        raised = {}
        for name, keys in step.members.items():
            hit = [k for k in keys if k in waiting]
            if len(keys) < p["min_peers"] or len(hit) < p["group_fraction"] * len(keys):
                continue
            level = upper_median(len(keys), (step.shares[k] for k in hit))
            count, base = step.baseline(keys)
            if count >= p["min_peers"] and level >= p["peer_ratio_min"] * base:
                raised[name] = (level, len(hit), len(keys), base)
        step.raised = _attribute(raised, step.members, waiting)

    def _ports(self, step: Step, held: dict) -> None:
        """Waiting ports outside raised groups that stand out from their peers."""
        p, covered = self.p, {k for name in step.raised for k in step.members[name]}
        for key in self._waiting(step) - covered:
            count, base = 0, 0.0
            for name in (("run", *held[key[0]]) if key[0] in held else None,
                         ("leaf", self.leaf_of[key]) if key in self.leaf_of else None):  # fmt: skip
                peers = [k for k in step.members.get(name, ()) if k != key] if name else []
                if len(peers) >= p["min_peers"]:
                    peer_set = set(peers)
                    known = [v for k, v in step.shares.items() if k in peer_set]
                    count, base = len(peers), upper_median(len(peers), known)
                    break
            else:
                count, base = step.baseline([key])
            if count >= p["min_peers"] and step.shares[key] >= p["peer_ratio_min"] * base:
                step.ports[key] = (step.shares[key], base)

    def _waiting(self, step: Step) -> set[Key]:
        return {k for k, v in step.shares.items() if v >= self.p["lost_share_min"]}


def _attribute(
    raised: dict[Group, Any], members: dict[Group, list[Key]], waiting: set[Key]
) -> dict[Group, Any]:
    """Leaf explained by runs reaching beyond it → the runs; run wholly under raised leaves → the leaves."""
    runs = {name for name in raised if name[0] == "run"}
    run_of = {k: name for name in runs for k in members[name]}
    kept = dict(raised)
    for name in [n for n in raised if n[0] == "leaf"]:
        keys = set(members[name])
        owners = {run_of.get(k) for k in keys & waiting}
        if None not in owners and all(set(members[r]) - keys for r in owners):
            del kept[name]
    under = {k for name in kept if name[0] == "leaf" for k in members[name]}
    for name in runs:
        if set(members[name]) <= under:
            del kept[name]
    return kept


def _port_signals(
    data: EvaluationData, series: dict[Key, tuple[list[IbPoint], list[float | None]]],
    judged: dict[float, Step],
) -> Iterator[Signal]:  # fmt: skip
    """One signal per candidate port that stood out at some step."""
    leaves = {(i.node, i.device, i.port): i.leaf_switch for i in data.port_inventory()}
    for key, (points, shares) in series.items():
        verdicts = [judged[pt.ts].ports.get(key) if pt.ts in judged else None for pt in points]
        if not any(verdicts):
            continue

        def describe(i: int, key: Key = key, points: list = points, verdicts: list = verdicts,
                     shares: list = shares) -> Detail:  # fmt: skip
            share, base = verdicts[i] or (shares[i] or 0.0, 0.0)
            summary = (
                f"IB congestion on {key[0]} {key[1]}:{key[2]}: {share:.1%} of the link lost "
                f"to waiting, peers {base:.2%}"
            )
            pt = points[i]
            context = {"lost_share": share, "peer_median": base, "xmit_wait": pt.xmit_wait,
                       "rate": pt.rate, "tx_bytes": pt.tx_bytes}  # fmt: skip
            return Detail(round(share, 6), summary, context)

        extra = {"leaf_switch": leaves[key]} if leaves.get(key) else {}
        times = [pt.ts for pt in points]
        yield Signal(port_labels(*key), times, [v is not None for v in verdicts], data.max_gap,
                     describe, extra)  # fmt: skip


def _group_signals(data: EvaluationData, judged: dict[float, Step]) -> Iterator[Signal]:
    """One signal per leaf switch or run that waited together at some step."""
    names = sorted({name for step in judged.values() for name in step.raised})
    times = sorted(
        {ts for seq in data.node_sample_times("ib").values() for ts in seq} | set(judged)
    )
    for name in names:
        verdicts = [judged[ts].raised.get(name) if ts in judged else None for ts in times]

        def describe(i: int, name: Group = name, verdicts: list = verdicts) -> Detail:
            level, hit, total, base = verdicts[i] or (0.0, 0, 0, 0.0)
            scope = f"leaf switch {name[1]}" if name[0] == "leaf" else f"run {name[1]}/{name[2]}"
            summary = (
                f"IB congestion on {scope}: {hit} of {total} ports wait together, median "
                f"{level:.1%} of the link lost, other busy ports {base:.2%}"
            )
            context = {
                "lost_share": level,
                "ports_waiting": hit,
                "ports": total,
                "peer_median": base,
            }
            return Detail(round(level, 6), summary, context)

        labels = (
            {"leaf_switch": name[1]}
            if name[0] == "leaf"
            else {"namespace": name[1], "run": name[2]}
        )
        yield Signal(labels, times, [v is not None for v in verdicts], data.max_gap, describe)
