"""Coverage of node identity: per exporter, how its series map to nodes and what maps to none.

``collect`` asks Prometheus for the node-identity label sets of each node-level family's
marker metric (one ``group by`` per family) and runs them through the same
``identity.NodeResolver`` ingest uses; ``summarise`` (pure) turns a resolver into one
``ExporterIdentity`` per exporter job, each unresolved group with its fix. Without
kube-state-metrics names are taken as labelled; values that look like exporter pods,
container ids or IP addresses are then reported as suspect, with the fixes.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import datetime

from .identity import (
    DCGM_HOST_LABELS,
    FIX_KSM,
    FIX_NODE_NAME,
    FIX_RELABEL,
    FIXES,
    Directory,
    Mapped,
    NodeResolver,
    fetch_directory,
    node_labels,
)
from .prometheus import PrometheusClient
from .queries import DCGM_MARKERS, IB_MARKERS

#: The metric whose label sets stand for each node-level family's exporters.
MARKERS = {
    "gpu": tuple(DCGM_MARKERS.values()),
    "ib": (IB_MARKERS["node_exporter"],),
}
LOOKBACK = 600
EXAMPLES = 3
_POD_NAME = re.compile(r"-[bcdfghjklmnpqrstvwxz2456789]{5}$")
_CONTAINER_ID = re.compile(r"^[0-9a-f]{12}([0-9a-f]{52})?$")
SUSPECT_POD = "Hostname looks like a pod or container name, not a node (taken as labelled)"
SUSPECT_IP = "node named by an IP address (taken as labelled)"


@dataclass
class IdentityGroup:
    """Series of one exporter that share a reason: how many, a few examples, the fix."""

    reason: str
    series: int
    examples: list[str]
    fix: str = ""


@dataclass
class ExporterIdentity:
    """One exporter (Prometheus ``job``) of a family: its series, mapped and not."""

    job: str
    family: str
    series: int
    mapped: list[IdentityGroup] = field(default_factory=list)
    unresolved: list[IdentityGroup] = field(default_factory=list)
    suspect: list[IdentityGroup] = field(default_factory=list)


def _example(identity: tuple[str, ...]) -> str:
    instance, label, value = identity
    shown = f"{label}={value!r}" if label and label != "instance" else ""
    return ", ".join(part for part in (f"instance={instance!r}" if instance else "", shown) if part)


def _group(reason: str, identities: set[tuple[str, ...]], fix: str = "") -> IdentityGroup:
    examples = [_example(i) for i in sorted(identities)[:EXAMPLES]]
    return IdentityGroup(reason, len(identities), examples, fix)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _suspects(identities: set[tuple[str, ...]]) -> list[IdentityGroup]:
    """Names taken as labelled that are most likely not node names (no kube-state-metrics)."""
    pods = {i for i in identities if i[1] in DCGM_HOST_LABELS and _looks_like_pod(i[2])}
    ips = {i for i in identities if _is_ip(i[2])}
    groups = []
    if pods:
        groups.append(_group(SUSPECT_POD, pods, f"{FIX_NODE_NAME}; or {FIX_KSM}"))
    if ips:
        groups.append(_group(SUSPECT_IP, ips, f"{FIX_RELABEL}; or {FIX_KSM}"))
    return groups


def _looks_like_pod(value: str) -> bool:
    return bool(_POD_NAME.search(value) or _CONTAINER_ID.match(value))


def summarise(family: str, resolver: NodeResolver) -> list[ExporterIdentity]:
    """One ``ExporterIdentity`` per job the resolver saw, sorted by job (pure)."""
    jobs = sorted({job for job, _ in resolver.mapped} | {job for job, _ in resolver.unresolved})
    found = []
    for job in jobs:
        mapped = {how: ids for (j, how), ids in resolver.mapped.items() if j == job}
        missed = {why: ids for (j, why), ids in resolver.unresolved.items() if j == job}
        exporter = ExporterIdentity(
            job=job or "(no job)",
            family=family,
            series=sum(len(ids) for ids in [*mapped.values(), *missed.values()]),
            mapped=[_group(how, ids) for how, ids in sorted(mapped.items())],
            unresolved=[_group(why, ids, FIXES[why]) for why, ids in sorted(missed.items())],
        )
        exporter.suspect = _suspects(mapped.get(Mapped.AS_IS, set()))
        found.append(exporter)
    return found


def directory_note(directory: Directory) -> str:
    """What the resolution rests on, as one line."""
    if not directory.active:
        return (
            "No kube_node_info in Prometheus (bare metal, or kube-state-metrics not deployed): "
            "node labels are taken as they are."
        )
    return (
        f"kube-state-metrics knows {len(directory.nodes)} nodes and "
        f"{len(directory.pods)} exporter pods: series are mapped to them."
    )


def collect(
    client: PrometheusClient, names: set[str], at: datetime | None = None
) -> tuple[list[ExporterIdentity], str]:
    """Every node-level exporter's identity coverage, and the directory note."""
    directory = fetch_directory(client, at, LOOKBACK)
    by = ", ".join(node_labels())
    exporters: list[ExporterIdentity] = []
    for family, markers in MARKERS.items():
        present = [m for m in markers if m in names]
        if not present:
            continue
        resolver = NodeResolver(directory)
        selector = f'{{__name__=~"{"|".join(present)}"}}'
        answer = client.query(f"group by ({by}) (last_over_time({selector}[{LOOKBACK}s]))", at)
        for series in answer.series:
            resolver.node_of(series.labels)
        exporters += summarise(family, resolver)
    return exporters, directory_note(directory)
