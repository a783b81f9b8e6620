"""Whose work an alert hurts: the runs on its node, the node's pool, GPU model and leaf switch.

Node-, GPU- and port-scoped alerts (those with a ``node`` label) get, as of the time their
condition began, labels routing and silences can match — ``namespace``, ``run``, ``queue``
(the LocalQueue), ``cluster_queue``, ``team``, ``pool``, ``gpu_model``, ``leaf_switch`` — and
a ``hurts`` entry in their context listing every run on the node with its size then. A rule's
own labels win (a port alert keeps its port's leaf switch). Labels are only added when known:
a node without a run gets its pool and hardware, nothing else.

When several runs share the node, the labels name the largest (most GPUs; then by name) and
the context lists them all. ``team`` comes from the admin's namespace teams, else from
``ALERTS_NAMESPACE_TEAMS``. The text notifications and the alert page show
(``hurts_text``) is computed from the context and the alert's times: "GPU-hours at stake so
far" is the run's GPUs × the time from the alert's start to its last matching data point
(or its resolution).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from ingest.models.choices import Pool
from ingest.selectors import placement
from runs.selectors import alerting as run_reads

from .lifecycle import Finding

DEFAULT_GPUS_PER_NODE = 8  # as the runs pages count a node without GPU samples
GPU_COUNT_WINDOW = 600.0  # seconds of GPU samples a node's GPU count is read from
ATTRIBUTION_LABELS = (
    "namespace",
    "run",
    "queue",
    "cluster_queue",
    "team",
    "pool",
    "gpu_model",
    "leaf_switch",
)


@dataclass(frozen=True)
class RunImpact:
    """A run on the alert's node when it began, and the run's size then."""

    namespace: str
    run: str
    queue: str
    cluster_queue: str
    team: str
    gpus: int
    nodes: int

    def as_context(self) -> dict[str, Any]:
        """The JSON shape kept in ``Alert.context["hurts"]``."""
        return {
            "namespace": self.namespace,
            "run": self.run,
            "queue": self.queue,
            "cluster_queue": self.cluster_queue,
            "team": self.team,
            "gpus": self.gpus,
            "nodes": self.nodes,
        }


def team_map() -> dict[str, str]:
    """namespace → team: ``ALERTS_NAMESPACE_TEAMS``, overridden by the admin's namespace teams."""
    from .models import NamespaceTeam

    teams = dict(getattr(settings, "ALERTS_NAMESPACE_TEAMS", {}) or {})
    teams.update(dict(NamespaceTeam.objects.values_list("namespace", "team")))
    return teams


def runs_on_nodes(
    probes: Iterable[tuple[str, float]], gap: float, teams: Mapping[str, str]
) -> dict[tuple[str, float], list[RunImpact]]:
    """(node, t) → the runs holding the node at t (± ``gap``), largest first."""
    probes = sorted(set(probes))
    if not probes:
        return {}
    times = [p[1] for p in probes]
    found = run_reads.runs_holding(probes, gap)
    sizes = run_reads.nodes_of_runs({(job, t) for _node, t, job, *_ in found}, gap)
    gpus = _gpu_counts({n for ids in sizes.values() for n in ids}, min(times), max(times))
    impacts: dict[tuple[str, float], list[RunImpact]] = {}
    for node, t, job, namespace, name, queue, cluster_queue in found:
        held = sizes.get((job, t), [])
        impact = RunImpact(
            namespace, name, queue, cluster_queue, teams.get(namespace, ""),
            sum(gpus.get(n, DEFAULT_GPUS_PER_NODE) for n in held), len(held),
        )  # fmt: skip
        impacts.setdefault((node, t), []).append(impact)
    for runs in impacts.values():
        runs.sort(key=lambda r: (-r.gpus, r.namespace, r.run))
    return impacts


def _gpu_counts(node_ids: set[int], start: float, end: float) -> dict[int, int]:
    return placement.gpu_counts(sorted(node_ids), start - GPU_COUNT_WINDOW, end)


def node_facts(probes: Iterable[tuple[str, float]]) -> dict[tuple[str, float], dict[str, str]]:
    """(node, t) → its pool as of t, GPU model and leaf switch, the known ones only."""
    probes = sorted(set(probes))
    if not probes:
        return {}
    facts = {}
    for node, t, pool, gpu_model, leaf, pool_then in placement.node_facts(probes):
        pool = pool_then or pool
        known = {"pool": "" if pool == Pool.UNKNOWN else pool, "gpu_model": gpu_model,
                 "leaf_switch": leaf}  # fmt: skip
        facts[(node, t)] = {k: v for k, v in known.items() if v}
    return facts


def labels_for(facts: Mapping[str, str], runs: list[RunImpact]) -> dict[str, str]:
    """The attribution labels of one alert: the node's facts and its largest run."""
    labels = dict(facts)
    if runs:
        top = runs[0]
        pairs = {"namespace": top.namespace, "run": top.run, "queue": top.queue,
                 "cluster_queue": top.cluster_queue, "team": top.team}  # fmt: skip
        labels.update({k: v for k, v in pairs.items() if v})
    return labels


def attribute(findings: dict[str, Finding], wanted: Iterable[str], gap: float) -> None:
    """Add attribution labels (``extra``) and context to the ``wanted`` node-scoped findings."""
    chosen = [fp for fp in wanted if fp in findings and findings[fp].labels.get("node")]
    if not chosen:
        return
    probes = {fp: (findings[fp].labels["node"], findings[fp].since) for fp in chosen}
    facts = node_facts(probes.values())
    runs = runs_on_nodes(probes.values(), gap, team_map())
    for fp, probe in probes.items():
        finding, impacts = findings[fp], runs.get(probe, [])
        extra = {**labels_for(facts.get(probe, {}), impacts), **finding.extra}
        context = dict(finding.detail.context)
        if impacts:
            context["hurts"] = [impact.as_context() for impact in impacts]
        detail = finding.detail._replace(context=context)
        findings[fp] = finding._replace(extra=extra, detail=detail)


# --- what the alert page and notifications say -------------------------------------------------


def gpu_hours(gpus: int, start: datetime, end: datetime) -> float:
    """GPU-hours of ``gpus`` GPUs from ``start`` to ``end`` (never negative)."""
    return gpus * max(0.0, (end - start).total_seconds()) / 3600.0


def format_gpu_hours(value: float) -> str:
    """``41``, ``1,204``; below 10 one decimal (``2.5``)."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def hurt_runs(context: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The runs an alert's context says it hurts (largest first); [] for other alerts."""
    runs = (context or {}).get("hurts")
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def alert_end(alert: Any) -> datetime:
    """Where "so far" ends for an alert: its resolution, else the last time its condition held."""
    return alert.resolved_at or alert.last_match_at


def hurts_text(run: Mapping[str, Any], since: datetime, end: datetime) -> str:
    """``hurts: ns/run (128 GPUs on 16 nodes) since 03:12 — 41 GPU-hours at stake so far``."""
    gpus, nodes = int(run.get("gpus") or 0), int(run.get("nodes") or 0)
    at_stake = format_gpu_hours(gpu_hours(gpus, since, end))
    return (
        f"hurts: {run.get('namespace')}/{run.get('run')} ({gpus} GPUs on {nodes} "
        f"node{'s' if nodes != 1 else ''}) since {since.astimezone(UTC):%H:%M} — "
        f"{at_stake} GPU-hours at stake so far"
    )


def alert_hurts(alert: Any) -> list[dict[str, Any]]:
    """Per run an alert hurts: the run's context entry plus ``text`` and ``gpu_hours``."""
    since, end = alert.pending_since, alert_end(alert)
    return [
        {**run, "text": hurts_text(run, since, end),
         "gpu_hours": gpu_hours(int(run.get("gpus") or 0), since, end)}
        for run in hurt_runs(alert.context)
    ]  # fmt: skip
