"""Cluster rules: a node that stops reporting, and ingest falling behind (the dead man's switch)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, Signal
from .series import duration, intervals_signal, iso


@register
class NodeMetricsMissing(BaseRule):
    """A known node stopped reporting GPU or IB data while the other nodes still report.

    A node is known to a family when it reported in the last ``forget_after_seconds``
    (24 h). It is missing when its newest sample is ≥ ``missing_after_seconds``
    (3 min) older than the family's data time while the family as a whole is
    fresh (others report; if nobody does, ``ingest_stale`` fires instead). While
    firing it inhibits the node's other alerts.
    """

    id = "node_metrics_missing"
    needs = ("gpu_times", "throughput", "last_seen")
    family = Family.GPU
    scope = ("node",)
    severity = "critical"
    params = (
        Param("missing_after_seconds", int, 180, "silence after which a node counts as missing"),
        Param("families", list, ["gpu", "ib"], "data families watched"),
        Param(
            "forget_after_seconds", int, 86400, "nodes silent longer than this are no longer known"
        ),
    )

    def lookback(self, settings: RuleSettings, max_gap: float) -> float:
        """One silence and a gap: a node with no sample in it is looked up by index (``last_seen``)."""
        return float(settings.params["missing_after_seconds"]) + max_gap

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        missing_after = float(p["missing_after_seconds"])
        intervals: dict[str, list[tuple[float, float | None]]] = defaultdict(list)
        reasons: dict[str, dict[str, float]] = defaultdict(dict)
        for family in p["families"]:
            as_of = data.as_of_family(family)
            times = _sample_times(data, family)
            newest = max((seq[-1] for seq in times.values() if seq), default=None)
            fresh = newest is not None and as_of - newest < missing_after
            for node, seq in times.items():
                if not seq or as_of - seq[-1] > p["forget_after_seconds"]:
                    continue
                for a, b in zip(seq, seq[1:], strict=False):
                    if b - a > missing_after:
                        intervals[node].append((a + missing_after, b))
                if fresh and as_of - seq[-1] >= missing_after:
                    intervals[node].append((seq[-1] + missing_after, None))
                    reasons[node][family] = seq[-1]
        for node, node_intervals in intervals.items():

            def describe(i: int, node: str = node) -> Detail:
                last = reasons[node]
                oldest = min(last.values(), default=data.now)
                families = ", ".join(sorted(last)) or "gpu/ib"
                summary = (
                    f"{node} stopped reporting {families} metrics {duration(data.now - oldest)} ago"
                )
                context = {
                    "families": sorted(last),
                    "last_sample": {f: iso(t) for f, t in last.items()},
                }
                return Detail(data.now - oldest, summary, context)

            yield intervals_signal({"node": node}, node_intervals, describe)


def _sample_times(data: EvaluationData, family: str) -> dict[str, list[float]]:
    """Per node, sorted distinct sample times in the window plus its newest sample before it."""
    times = {node: list(seq) for node, seq in data.node_sample_times(family).items()}
    for (fam, node), ts in data.last_seen.items():
        if fam == family and ts not in times.get(node, ()):
            times.setdefault(node, []).append(ts)
            times[node].sort()
    return times


@register
class IngestStale(BaseRule):
    """Ingest of a family has fallen behind by more than ``max_lag_seconds``: the dead man's switch.

    Judged on the wall clock, not on data time: when ingest stops, data time
    stops too, and every other rule goes quiet; this one speaks up.
    """

    id = "ingest_stale"
    needs = ()
    family = "ingest"
    scope = ("family",)
    severity = "critical"
    params = (
        Param("max_lag_seconds", int, 300, "lag behind the wall clock above which ingest is stale"),
        Param("families", list, [], "families watched (empty: every family with a cursor)"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        max_lag = float(settings.params["max_lag_seconds"])
        watched = set(settings.params["families"])
        for cursor in data.cursors:
            if watched and cursor.family not in watched:
                continue
            if data.now - cursor.covered_until <= max_lag:
                continue

            def describe(i: int, cursor: object = cursor) -> Detail:
                lag = data.now - cursor.covered_until  # type: ignore[attr-defined]
                summary = f"Ingest of {cursor.family} is {duration(lag)} behind"  # type: ignore[attr-defined]
                return Detail(lag, summary, {"covered_until": iso(cursor.covered_until)})  # type: ignore[attr-defined]

            start = cursor.covered_until + max_lag
            yield intervals_signal({"family": cursor.family}, [(start, None)], describe)

    def lookback(self, settings: RuleSettings, max_gap: float) -> float:
        """Reads the cursors only."""
        return 0.0

    def as_of(self, data: EvaluationData) -> float:
        """The wall clock: data time stops when ingest does."""
        return data.now
