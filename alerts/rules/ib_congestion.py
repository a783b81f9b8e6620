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

Medians are upper medians over every known port (one without a sample at the
step counts as not waiting), and ports fetched below
``lost_share_min / peer_ratio_min`` (the prefilter) count as 0: that changes no
comparison, since such a median stays below the level where it could matter.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ingest.models.choices import Family

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
    """One step: shares ≥ the candidate level, the groups its waiting ports touch, verdicts.

    Groups are kept as sizes and membership tests, never as lists of the fabric's ports.
    """

    shares: dict[Key, float]
    present: Collection[str]
    held: dict[str, tuple[str, str]]  # node → (namespace, run)
    busy_nodes: Collection[str]  # nodes running a run (every present node when no run is known)
    busy_ports: int
    size: dict[Group, int] = field(default_factory=dict)
    busy_inside: dict[Group, int] = field(default_factory=dict)
    hits: dict[Group, list[Key]] = field(default_factory=dict)
    leaf_of: dict[Key, str] = field(default_factory=dict)
    raised: dict[Group, tuple[float, int, int, float]] = field(default_factory=dict)
    ports: dict[Key, tuple[float, float]] = field(default_factory=dict)

    def contains(self, name: Group, key: Key) -> bool:
        """Whether ``key`` is one of the group's ports at this step."""
        if name[0] == "leaf":
            return self.leaf_of.get(key) == name[1]
        return self.held.get(key[0]) == name[1:]

    def baseline(self, name: Group | None = None, key: Key | None = None) -> tuple[int, float]:
        """(count, upper median share) of the busy ports outside group ``name`` (or but ``key``)."""
        if name is not None:
            count = self.busy_ports - self.busy_inside[name]
            known = [v for k, v in self.shares.items()
                     if k[0] in self.busy_nodes and not self.contains(name, k)]  # fmt: skip
        else:
            count = self.busy_ports - (key is not None and key[0] in self.busy_nodes)
            known = [v for k, v in self.shares.items() if k[0] in self.busy_nodes and k != key]
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
    family = Family.IB
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

    def history_mark(self, settings: RuleSettings) -> dict[str, str]:
        """``wait`` (xmit_wait >= 0.000625 × rate, or saturated) when the coefficient is as high."""
        return {"ib": "wait"} if _coefficient(settings.params) >= 0.000625 else {}

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
        judge = _Judge(data, p)
        judged = judge.run(by_ts)
        yield from _port_signals(data, series, judged, judge.leaf_of)
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

    Only the groups a waiting port belongs to are sized; the busy ports outside a group are
    counted, not listed: a step costs its candidates and their groups, not the fabric.
    """

    def __init__(self, data: EvaluationData, params: dict[str, Any]) -> None:
        self.p = params
        inventory = data.port_inventory()
        self.ports_of = Counter(info[0] for info in inventory)
        self.leaf_of: dict[Key, str] = {}
        self.leaf_members: dict[str, list[Key]] = defaultdict(list)
        for node, device, port, leaf in inventory:
            if leaf:
                key = (node, device, port)
                self.leaf_of[key] = leaf
                self.leaf_members[leaf].append(key)
        self._busy_inside: dict[tuple[str, int], int] = {}
        self.assignments = sorted(data.assignments, key=lambda a: a.start)
        self.tolerance = data.max_gap
        self.times = data.node_sample_times("ib")

    def run(self, by_ts: dict[float, dict[Key, float]]) -> dict[float, Step]:
        """Each step with a candidate, judged."""
        steps = sorted(by_ts)
        held = self._held(steps)
        idle = {ts for ts in steps if not held[ts]}  # no run known: the present ports are the peers
        present: dict[float, set[str]] = {ts: {k[0] for k in by_ts[ts]} for ts in steps}
        for node, times in self.times.items() if idle else ():
            for ts in idle.intersection(times):
                present[ts].add(node)
        shapes: dict[int, tuple[int, dict]] = {}  # per held mapping: busy ports, ports per run
        judged = {}
        for ts in steps:
            nodes = held[ts]
            if id(nodes) not in shapes:
                per_run: dict[tuple[str, str], int] = defaultdict(int)
                for node, run in nodes.items():
                    per_run[run] += self.ports_of.get(node, 0)
                shapes[id(nodes)] = (sum(per_run.values()), per_run)
            busy, per_run = shapes[id(nodes)]
            judged[ts] = self._judge(by_ts[ts], present[ts], nodes, busy, per_run)
        return judged

    def _held(self, steps: list[float]) -> dict[float, dict[str, tuple[str, str]]]:
        """Per step, the run each node holds (the latest-starting assignment covering it).

        Assignments change rarely within a look-back: one mapping per stretch of steps with the
        same assignments, shared by those steps.
        """
        spans = []
        for a in self.assignments:  # ascending start: a later start overrides
            lo = bisect_left(steps, a.start - self.tolerance)
            hi = bisect_right(steps, a.end + self.tolerance)
            if lo < hi:
                spans.append((lo, hi, a.node, (a.namespace, a.run)))
        cuts = sorted({0, len(steps), *(lo for lo, *_ in spans), *(hi for _, hi, *_ in spans)})
        held: dict[float, dict[str, tuple[str, str]]] = {}
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            mapping = {node: run for a_lo, a_hi, node, run in spans if a_lo <= lo and hi <= a_hi}
            for ts in steps[lo:hi]:
                held[ts] = mapping
        return held

    def _judge(self, shares: dict[Key, float], present: set[str], held: dict, busy_ports: int,
               per_run: dict) -> Step:  # fmt: skip
        if held:  # nodes running a run are the busy ones (an absent node's ports count as 0)
            step = Step(shares, present, held, held.keys(), busy_ports, leaf_of=self.leaf_of)
        else:  # no run known: every present port is a peer
            busy = sum(self.ports_of.get(n, 0) for n in present)
            step = Step(shares, present, held, present, busy, leaf_of=self.leaf_of)
        for key in self._waiting(step):
            leaf, run = self.leaf_of.get(key), held.get(key[0])
            if leaf:
                self._size(step, ("leaf", leaf))
                step.hits[("leaf", leaf)].append(key)
            if run:
                name = ("run", *run)
                if name not in step.size:
                    step.size[name] = step.busy_inside[name] = per_run[run]
                    step.hits[name] = []
                step.hits[name].append(key)
        self._groups(step)
        self._ports(step)
        return step

    def _size(self, step: Step, name: Group) -> None:
        """Size a leaf group: its ports, and how many of them are busy (cached per run mapping)."""
        if name in step.size:
            return
        members = self.leaf_members[name[1]]
        memo = (name[1], id(step.busy_nodes))
        if memo not in self._busy_inside:
            self._busy_inside[memo] = sum(1 for k in members if k[0] in step.busy_nodes)
        step.size[name], step.busy_inside[name] = len(members), self._busy_inside[memo]
        step.hits[name] = []

    def _groups(self, step: Step) -> None:
        """Groups that wait together and stand out, after the leaf/run attribution."""
        p = self.p
        raised = {}
        for name, hit in step.hits.items():
            size = step.size[name]
            if size < p["min_peers"] or len(hit) < p["group_fraction"] * size:
                continue
            level = upper_median(size, (step.shares[k] for k in hit))
            count, base = step.baseline(name)
            if count >= p["min_peers"] and level >= p["peer_ratio_min"] * base:
                raised[name] = (level, len(hit), size, base)
        step.raised = self._attribute(step, raised)

    def _attribute(self, step: Step, raised: dict[Group, Any]) -> dict[Group, Any]:
        """Leaf explained by runs reaching beyond it → the runs; run wholly under raised leaves → the leaves."""
        kept = dict(raised)
        runs = [name for name in raised if name[0] == "run"]
        for name in [n for n in raised if n[0] == "leaf"]:
            held = step.held
            owners = {("run", *held[k[0]]) if k[0] in held else None for k in step.hits[name]}
            members = self.leaf_members[name[1]]
            inside = {r: sum(1 for k in members if held.get(k[0]) == r[1:]) for r in owners if r}
            if owners <= set(runs) and all(step.size[r] > inside[r] for r in owners if r):
                del kept[name]  # its waiting ports are those runs', and the runs reach beyond it
        leaves = [name for name in kept if name[0] == "leaf"]
        for name in runs:
            nodes = {n for n, run in step.held.items() if run == name[1:]}
            keys = [k for leaf in leaves for k in self.leaf_members[leaf[1]] if k[0] in nodes]
            if leaves and len(keys) >= step.size[name]:
                del kept[name]  # every port of the run sits under a raised leaf
        return kept

    def _ports(self, step: Step) -> None:
        """Waiting ports outside raised groups that stand out from their peers."""
        p = self.p
        for key in self._waiting(step):
            if any(step.contains(name, key) for name in step.raised):
                continue
            count, base = 0, 0.0
            run = step.held.get(key[0])
            for name in (("run", *run) if run else None,
                         ("leaf", self.leaf_of[key]) if key in self.leaf_of else None):  # fmt: skip
                if name is None:
                    continue
                count = step.size[name] - 1
                if count >= p["min_peers"]:
                    known = [
                        v for k, v in step.shares.items() if k != key and step.contains(name, k)
                    ]
                    base = upper_median(count, known)
                    break
            else:
                count, base = step.baseline(key=key)
            if count >= p["min_peers"] and step.shares[key] >= p["peer_ratio_min"] * base:
                step.ports[key] = (step.shares[key], base)

    def _waiting(self, step: Step) -> list[Key]:
        return [k for k, v in step.shares.items() if v >= self.p["lost_share_min"]]


def _port_signals(
    data: EvaluationData, series: dict[Key, tuple[list[IbPoint], list[float | None]]],
    judged: dict[float, Step], leaves: dict[Key, str],
) -> Iterator[Signal]:  # fmt: skip
    """One signal per candidate port that stood out at some step."""
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
