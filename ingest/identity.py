"""Which node a series belongs to: the one place that names a node, for every family.

Rules (docs/node-identity.md, with their sources):

1. Every value that names a node or an IB device goes through ``checked``: stripped,
   refused when empty, longer than its column (``Node.name``, ``IbPort.device``) or
   holding a control character or an unpaired surrogate. A refused series is skipped
   and counted with the reason; the rest of its family is stored.
2. A series' candidate node is the first present of ``INGEST_NODE_LABELS``, else the
   host of ``instance``.
3. With kube-state-metrics (``kube_node_info`` in Prometheus) a candidate is accepted only
   when it names a known node; otherwise it is mapped: a label value that is an exporter
   pod's name (dcgm-exporter's ``Hostname`` without NODE_NAME) → that pod's node
   (``kube_pod_info{pod,node}``); the ``instance`` host → the node whose
   ``kube_node_info{internal_ip}`` or pods' ``kube_pod_info{host_ip}`` it is (hostNetwork
   exporters), or the node of the pod whose ``pod_ip`` it is (pod-network exporters, e.g.
   a container-id ``Hostname``). What maps to no node is counted per exporter (``job``)
   with the reason, never created as a node.
4. Without kube-state-metrics (no ``kube_node_info`` at all: bare metal) the candidate is
   taken as it is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from . import queries
from .models import IbPort, Node
from .prometheus import PrometheusClient, Series

DEFAULT_NODE_LABELS = ("node", "hostname", "Hostname", "kubernetes_node")
NODE_NAME_MAX: int = Node._meta.get_field("name").max_length  # type: ignore[assignment]
DEVICE_MAX: int = IbPort._meta.get_field("device").max_length  # type: ignore[assignment]
GUID_MAX: int = IbPort._meta.get_field("guid").max_length  # type: ignore[assignment]
#: How long before a window's end kube-state-metrics series still count (its scrape gap).
LOOKBACK_SECONDS = 300
DCGM_HOST_LABELS = ("Hostname", "hostname")


class Problem:
    """Why a label value cannot name anything (``checked``)."""

    EMPTY = "empty"
    TOO_LONG = "too long"
    CONTROL = "control character"
    SURROGATE = "unpaired surrogate"


class Mapped:
    """How a series' node was found (coverage reports these per exporter)."""

    LABEL = "node label names a known node"
    INSTANCE = "instance names a known node"
    INTERNAL_IP = "instance IP via kube_node_info{internal_ip}"
    HOST_IP = "instance IP via kube_pod_info{host_ip}"
    POD_NAME = "exporter pod name via kube_pod_info{pod,node}"
    POD_IP = "exporter pod IP via kube_pod_info{pod_ip}"
    AS_IS = "taken as labelled (no kube-state-metrics)"


class Unresolved:
    """Why a series names no node; each has its fix in ``FIXES``."""

    INVALID = "node label invalid"
    DEVICE = "device label invalid"
    NO_LABEL = "no node label and no instance"
    POD_NAME = "Hostname is not a node (an exporter pod or container name?)"
    LABEL = "node label names no known node, exporter pod or IP"
    INSTANCE = "instance names no known node, node IP or exporter pod IP"
    AMBIGUOUS = "maps to more than one node"


FIX_NODE_NAME = (
    "set NODE_NAME on the dcgm-exporter DaemonSet (env NODE_NAME from spec.nodeName) — "
    "Hostname is the pod name"
)
FIX_RELABEL = (
    "relabel instance to the node name (kube-prometheus does: "
    "__meta_kubernetes_pod_node_name / __meta_kubernetes_endpoint_node_name)"
)
FIX_KSM = "deploy kube-state-metrics (kube_node_info, kube_pod_info) so node names can be checked"
FIX_LABEL = "fix the exporter's labels: node names of at most 253 characters, no control characters"
FIXES = {
    Unresolved.INVALID: FIX_LABEL,
    Unresolved.DEVICE: FIX_LABEL,
    Unresolved.NO_LABEL: FIX_RELABEL,
    Unresolved.POD_NAME: FIX_NODE_NAME,
    Unresolved.LABEL: FIX_RELABEL,
    Unresolved.INSTANCE: FIX_RELABEL,
    Unresolved.AMBIGUOUS: FIX_RELABEL,
}


def _has_surrogate(value: str) -> bool:
    return any(0xD800 <= ord(char) <= 0xDFFF for char in value)


def checked(value: str | None, limit: int = NODE_NAME_MAX) -> tuple[str | None, str]:
    """(the normalised value, "") or (None, the ``Problem``): the one normalisation of names."""
    cleaned = (value or "").strip()
    if not cleaned:
        return None, Problem.EMPTY
    if len(cleaned) > limit:
        return None, Problem.TOO_LONG
    if cleaned.isascii() and cleaned.isprintable():  # the common case, without a loop
        return cleaned, ""
    if _has_surrogate(cleaned):
        return None, Problem.SURROGATE
    if any(unicodedata.category(char) == "Cc" for char in cleaned):
        return None, Problem.CONTROL
    return cleaned, ""


def normalised(value: str | None, limit: int = NODE_NAME_MAX) -> str | None:
    """``checked`` without the reason: the value, or None when it cannot name anything."""
    return checked(value, limit)[0]


def optional(value: str | None, limit: int = NODE_NAME_MAX) -> str | None:
    """Like ``normalised``, but an empty value is "" (allowed); None only when it does not fit."""
    name, problem = checked(value, limit)
    return "" if problem == Problem.EMPTY else name


def host_of_instance(instance: str) -> str:
    """``"10.0.0.14:9100"`` → ``"10.0.0.14"``; ``"[fd00::1]:9100"`` → ``"fd00::1"``."""
    if instance.startswith("["):  # [ipv6]:port
        return instance[1:].partition("]")[0]
    host, _, port = instance.rpartition(":")
    return host if host and port.isdigit() else instance


def node_labels() -> list[str]:
    """The labels a node-level query must keep: node labels, ``instance`` and ``job``."""
    return [*settings.INGEST_NODE_LABELS, "instance", "job"]


def candidate(labels: Mapping[str, str], order: Sequence[str] | None = None) -> tuple[str, str]:
    """(label, value) naming the node as labelled: the first present node label, else
    ``instance``'s host; ("", "") when there is neither."""
    for label in order or settings.INGEST_NODE_LABELS:
        if labels.get(label):
            return label, labels[label]
    instance = labels.get("instance")
    return ("instance", host_of_instance(instance)) if instance else ("", "")


# --- what kube-state-metrics says -------------------------------------------

AMBIGUOUS = ""


def _unique(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """key → node; a key seen with two nodes maps to ``AMBIGUOUS``."""
    found: dict[str, str] = {}
    for key, node in pairs:
        if key and node:
            found[key] = node if found.get(key, node) == node else AMBIGUOUS
    return found


@dataclass(frozen=True)
class Directory:
    """Nodes and the exporter pods on them, per kube-state-metrics; empty: bare metal."""

    nodes: frozenset[str] = frozenset()
    internal_ips: Mapping[str, str] = field(default_factory=dict)
    host_ips: Mapping[str, str] = field(default_factory=dict)
    pods: Mapping[str, str] = field(default_factory=dict)
    pod_ips: Mapping[str, str] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        """True when kube-state-metrics named at least one node (then names are checked)."""
        return bool(self.nodes)


def directory_from(node_info: Iterable[Series], pod_info: Iterable[Series]) -> Directory:
    """The directory from ``kube_node_info`` and ``kube_pod_info`` series (pure)."""
    nodes = [(s.labels.get("internal_ip", ""), normalised(s.labels.get("node"))) for s in node_info]
    known = frozenset(node for _ip, node in nodes if node)
    pods = [(s.labels, normalised(s.labels.get("node"))) for s in pod_info]
    pods = [(labels, node) for labels, node in pods if node in known]
    return Directory(
        nodes=known,
        internal_ips=_unique((ip, node) for ip, node in nodes if node),
        host_ips=_unique((labels.get("host_ip", ""), node) for labels, node in pods),
        pods=_unique((labels.get("pod", ""), node) for labels, node in pods),
        pod_ips=_unique(
            (labels.get("pod_ip", ""), node)
            for labels, node in pods
            if labels.get("host_network") != "true"
        ),
    )


def fetch_directory(client: PrometheusClient, at: datetime | None, span: int) -> Directory:
    """Ask Prometheus (unscoped: a shard's matcher must not hide nodes) for the directory,
    cached on the client for its cycle."""
    base = getattr(client, "base", client)
    cache: dict[tuple[datetime | None, int], Directory] = base.__dict__.setdefault(
        "_node_directories", {}
    )
    key = (at, span)
    if key not in cache:
        node_info = base.query(_promql("nodes", span), at).series
        known = [s for s in node_info if s.labels.get("node")]
        pod_info = base.query(_promql("pods", span), at).series if known else []
        cache[key] = directory_from(known, pod_info)
    return cache[key]


def _promql(name: str, span: int) -> str:
    overrides: Mapping[str, str] = getattr(settings, "INGEST_PROMQL_OVERRIDES", {}) or {}
    template = overrides.get(f"identity.default.{name}", queries.IDENTITY["default"][name])
    return template.replace("{range}", f"{span}s")


# --- resolving series -------------------------------------------------------


@dataclass
class NodeResolver:
    """Names the nodes of one pull's series and keeps count of how (``mapped``) and of what
    it could not name (``unresolved``), each as (job, reason) → distinct series identities."""

    directory: Directory = field(default_factory=Directory)
    mapped: dict[tuple[str, str], set[tuple[str, ...]]] = field(default_factory=dict)
    unresolved: dict[tuple[str, str], set[tuple[str, ...]]] = field(default_factory=dict)

    def node_of(self, labels: Mapping[str, str]) -> str | None:
        """The node an exporter series is about, or None (counted) when it names none."""
        label, value = candidate(labels)
        job, identity = labels.get("job", ""), (labels.get("instance", ""), label, value)
        if not label:
            return self._miss(job, Unresolved.NO_LABEL, identity)
        name, problem = checked(value)
        if name is None:
            return self._miss(job, Unresolved.INVALID, identity)
        if not self.directory.active:
            return self._hit(job, Mapped.AS_IS, identity, name)
        found, how = self._lookup(label, name, labels)
        if found:
            return self._hit(job, how, identity, found)
        return self._miss(job, how, identity)

    def named(self, value: str, job: str) -> str | None:
        """A node named by a value that is not a label (treydock's node description)."""
        name, _problem = checked(value)
        identity = ("", "", value)
        if name is None:
            return self._miss(job, Unresolved.INVALID, identity)
        if not self.directory.active or name in self.directory.nodes:
            return self._hit(job, Mapped.AS_IS if not self.directory.active else Mapped.LABEL,
                             identity, name)  # fmt: skip
        for table, how in (
            (self.directory.pods, Mapped.POD_NAME),
            (self.directory.internal_ips, Mapped.INTERNAL_IP),
        ):
            if table.get(name):
                return self._hit(job, how, identity, table[name])
        return self._miss(job, Unresolved.LABEL, identity)

    def device(self, value: str | None, labels: Mapping[str, str]) -> str | None:
        """An IB device name fit for ``IbPort.device``, or None (counted)."""
        name, _problem = checked(value, DEVICE_MAX)
        if name is None:
            identity = (labels.get("instance", ""), "device", value or "")
            return self._miss(labels.get("job", ""), Unresolved.DEVICE, identity)
        return name

    def located(
        self, located: tuple[str, str] | None, guid: str, labels: Mapping[str, str]
    ) -> tuple[str, str] | None:
        """A treydock port's (node, device) from its HCA description, checked; None (counted
        when it was there but unfit) for a port that names no node."""
        if located is None:
            return None
        node = self.named(located[0], labels.get("job", ""))
        device = self.device(located[1], labels) if node is not None else None
        if device is None or checked(guid or "-", GUID_MAX)[0] is None:
            return None
        return node, device  # type: ignore[return-value]

    def _lookup(self, label: str, name: str, labels: Mapping[str, str]) -> tuple[str, str]:
        """(node, how) or ("", the ``Unresolved`` reason) under kube-state-metrics."""
        known = self.directory
        if name in known.nodes:
            return name, Mapped.INSTANCE if label == "instance" else Mapped.LABEL
        if label != "instance" and name in known.pods:
            return known.pods[name], Mapped.POD_NAME if known.pods[name] else Unresolved.AMBIGUOUS
        host = host_of_instance(labels.get("instance", ""))
        if host in known.nodes:
            return host, Mapped.INSTANCE
        for table, how in (
            (known.internal_ips, Mapped.INTERNAL_IP),
            (known.host_ips, Mapped.HOST_IP),
            (known.pod_ips, Mapped.POD_IP),
        ):
            if host in table:
                return table[host], how if table[host] else Unresolved.AMBIGUOUS
        if label == "instance":
            return "", Unresolved.INSTANCE
        return "", Unresolved.POD_NAME if label in DCGM_HOST_LABELS else Unresolved.LABEL

    def _hit(self, job: str, how: str, identity: tuple[str, ...], node: str) -> str:
        self.mapped.setdefault((job, how), set()).add(identity)
        return node

    def _miss(self, job: str, reason: str, identity: tuple[str, ...]) -> None:
        self.unresolved.setdefault((job, reason), set()).add(identity)
        return None

    def unfit(self) -> dict[str, int]:
        """``"job: reason"`` → distinct series skipped (what the family's health records)."""
        return {
            f"{job or '(no job)'}: {reason}": len(identities)
            for (job, reason), identities in sorted(self.unresolved.items())
        }


def resolver_for(client: PrometheusClient, start: datetime, end: datetime) -> NodeResolver:
    """A resolver for a pull of (start, end]: kube-state-metrics as it was over that window."""
    span = int((end - start).total_seconds()) + LOOKBACK_SECONDS
    return NodeResolver(fetch_directory(client, end, span))


AS_LABELLED = Directory()


def node_name(labels: Mapping[str, str], resolver: NodeResolver | None = None) -> str | None:
    """The node a series is about: through ``resolver``, or (none given) as labelled, normalised."""
    return (resolver or NodeResolver(AS_LABELLED)).node_of(labels)
