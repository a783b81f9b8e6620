"""Coverage: which families and metrics Prometheus has, how many nodes report them, and why not.

``build_report`` is pure (metric names + per-metric node counts + a few label
facts in, a report out); ``collect`` asks Prometheus for those inputs with one
``count by (__name__)`` query per group of metrics sharing node labels.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from . import coverage_identity
from .coverage_catalogue import (
    CATALOGUE,
    IB_FACT_QUERIES,
    DialectSpec,
    FamilySpec,
    MetricSpec,
    ib_notes,
)
from .coverage_identity import ExporterIdentity
from .coverage_intervals import JobInterval, job_intervals, warnings
from .prometheus import PrometheusClient

OK, PARTIAL, MISSING = "ok", "partial", "missing"
#: Label facts ``collect`` measures (series counts), used for notes.
FACT_QUERIES = {
    "dcgm_Hostname": 'count({__name__=~"DCGM_FI_DEV_GPU_UTIL|dcgm_gpu_utilization", Hostname!=""})',
    "dcgm_hostname": 'count({__name__=~"DCGM_FI_DEV_GPU_UTIL|dcgm_gpu_utilization", hostname!=""})',
    "pod_queue_label": 'count(kube_pod_labels{label_kueue_x_k8s_io_queue_name!=""})',
    **IB_FACT_QUERIES,
}


@dataclass
class MetricStatus:
    """One metric: found or not, nodes reporting it (None: not per node / unknown), cause, fix."""

    name: str
    required: bool
    found: bool
    nodes: int | None = None
    cause: str = ""
    fix: str = ""


@dataclass
class FamilyStatus:
    """One family: ok / partial / missing, the dialect detected, its metrics and notes."""

    family: str
    title: str
    status: str
    dialect: str | None
    metrics: list[MetricStatus]
    cause: str = ""
    fix: str = ""
    notes: list[str] = field(default_factory=list)
    #: Per job exporting the family, its scrape interval measured from sample spacing.
    scrape_intervals: list[JobInterval] = field(default_factory=list)

    @property
    def missing(self) -> list[MetricStatus]:
        """The metrics not found."""
        return [m for m in self.metrics if not m.found]


@dataclass
class CoverageReport:
    """The whole report, serialisable with ``as_dict``."""

    families: list[FamilyStatus]
    generated_at: datetime | None = None
    prometheus: str = ""
    #: Node identity per exporter (``coverage_identity``) and what it rests on.
    identity: list[ExporterIdentity] = field(default_factory=list)
    identity_note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the /api/v1/coverage body)."""
        body = asdict(self)
        body["generated_at"] = self.generated_at.isoformat() if self.generated_at else None
        return body


def _choose(spec: FamilySpec, names: set[str]) -> tuple[DialectSpec, int]:
    scored = [(sum(m.name in names for m in d.metrics), -i, d) for i, d in enumerate(spec.dialects)]
    found, _, dialect = max(scored, key=lambda item: item[:2])
    return dialect, found


def _metric(spec: MetricSpec, names: set[str], node_counts: Mapping[str, int]) -> MetricStatus:
    found = spec.name in names
    nodes = node_counts.get(spec.name) if spec.node_labels and found else None
    if found and spec.node_labels and nodes is None:
        nodes = 0
    return MetricStatus(
        spec.name, spec.required, found, nodes, *(("", "") if found else (spec.cause, spec.fix))
    )


def _family(spec: FamilySpec, names: set[str], node_counts: Mapping[str, int]) -> FamilyStatus:
    dialect, found = _choose(spec, names)
    metrics = [_metric(m, names, node_counts) for m in dialect.metrics]
    required_missing = [m for m in metrics if m.required and not m.found]
    status = MISSING if found == 0 else PARTIAL if required_missing else OK
    family = FamilyStatus(spec.family, spec.title, status, dialect.name if found else None, metrics)
    if status == MISSING:
        family.cause, family.fix = dialect.absent_cause, dialect.absent_fix
        for metric in metrics:
            metric.cause, metric.fix = (
                metric.cause or dialect.absent_cause,
                metric.fix or dialect.absent_fix,
            )
    return family


def _notes(report: list[FamilyStatus], names: set[str], facts: Mapping[str, int]) -> None:
    by_family = {f.family: f for f in report}
    gpu, ib, runs = by_family.get("gpu"), by_family.get("ib"), by_family.get("runs")
    if gpu and gpu.dialect == "dcgm-exporter 1.x":
        gpu.notes.append(
            "Legacy dcgm-exporter 1.x names detected (dcgm_gpu_utilization, labels uuid / pod_name): "
            "read through the 1.x dialect; upgrade dcgm-exporter for current names and labels."
        )
    hostname, capital = facts.get("dcgm_hostname", 0), facts.get("dcgm_Hostname", 0)
    if gpu and gpu.dialect and hostname and capital:
        gpu.notes.append(
            "Both `Hostname` and `hostname` labels seen: mixed dcgm-exporter versions; both are accepted."
        )
    elif gpu and gpu.dialect and hostname:
        gpu.notes.append(
            "dcgm-exporter uses the `hostname` label (renamed 2026-05 from `Hostname`): accepted."
        )
    elif gpu and gpu.dialect and not capital and facts:
        gpu.notes.append(
            "No `Hostname`/`hostname` label on GPU series: the node comes from `node` or `instance`."
        )
    if ib:
        _ib_notes(ib, names, facts)
    if runs and "kube_pod_labels" in names and facts.get("pod_queue_label") == 0:
        runs.notes.append(
            "kube_pod_labels has no label_kueue_x_k8s_io_queue_name: runs get no LocalQueue. Add "
            "--metric-labels-allowlist=pods=[kueue.x-k8s.io/queue-name] to kube-state-metrics."
        )


def _ib_notes(ib: FamilyStatus, names: set[str], facts: Mapping[str, int]) -> None:
    """The IB family's notes and, when treydock runs without its HCA collector, the cause."""
    notes, override = ib_notes(names, dict(facts))
    ib.notes += notes
    if override and ib.status == MISSING:
        ib.cause, ib.fix = override
        for metric in ib.metrics:
            metric.cause, metric.fix = override


def build_report(
    names: set[str], node_counts: Mapping[str, int], facts: Mapping[str, int] | None = None
) -> CoverageReport:
    """The coverage of every family, given Prometheus's metric names and per-metric node counts."""
    families = [_family(spec, names, node_counts) for spec in CATALOGUE]
    _notes(families, names, facts or {})
    return CoverageReport(families)


def node_count_queries(names: set[str]) -> dict[tuple[str, ...], str]:
    """One ``count by (__name__)`` of distinct node label sets per group of found metrics."""
    groups: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for spec in CATALOGUE:
        for dialect in spec.dialects:
            for metric in dialect.metrics:
                if metric.node_labels and metric.name in names:
                    groups[metric.node_labels].add(metric.name)
    return {
        labels: (
            f"count by (__name__) (count by (__name__, {', '.join(labels)}) "
            f'({{__name__=~"{"|".join(sorted(metrics))}"}}))'
        )
        for labels, metrics in groups.items()
    }


def collect(client: PrometheusClient, at: datetime | None = None) -> CoverageReport:
    """Ask Prometheus (raises PrometheusError) and build the report."""
    names = client.metric_names()
    counts: dict[str, int] = {}
    for query in node_count_queries(names).values():
        for series in client.query(query, at).series:
            counts[series.labels.get("__name__", "")] = int(series.points[-1][1])
    facts = {}
    for fact, query in FACT_QUERIES.items():
        answer = client.query(query, at).series
        facts[fact] = int(answer[0].points[-1][1]) if answer else 0
    report = build_report(names, counts, facts)
    report.identity, report.identity_note = coverage_identity.collect(client, names, at)
    identity_notes(report)
    interval_notes(report, client, at)
    report.prometheus, report.generated_at = client.url, at or datetime.now(UTC)
    return report


def identity_notes(report: CoverageReport) -> None:
    """A note on each family whose exporters have series that name no node (or a suspect one)."""
    by_family = {f.family: f for f in report.families}
    for exporter in report.identity:
        family = by_family.get(exporter.family)
        if family is None:
            continue
        family.notes += [
            f"{group.series} series of {exporter.job} name no known node ({group.reason}): "
            f"not stored. Fix: {group.fix}."
            for group in exporter.unresolved
        ]
        family.notes += [
            f"{group.series} series of {exporter.job}: {group.reason}. Fix: {group.fix}."
            for group in exporter.suspect
        ]


def interval_notes(report: CoverageReport, client: PrometheusClient, at: datetime | None) -> None:
    """Each found family's per-job scrape intervals, and a note where one degrades ingest."""
    for family in report.families:
        metric = next((m.name for m in family.metrics if m.found), None)
        if metric is None:
            continue
        family.scrape_intervals = job_intervals(client, metric, at)
        for interval in family.scrape_intervals:
            family.notes += warnings(interval)
