"""Which node a series belongs to: the first present of the configured labels, then ``instance``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.conf import settings

DEFAULT_NODE_LABELS = ("node", "hostname", "Hostname", "kubernetes_node")


def _host_of_instance(instance: str) -> str:
    if instance.startswith("["):  # [ipv6]:port
        return instance[1:].partition("]")[0]
    host, _, _port = instance.rpartition(":")
    return host if host and _port.isdigit() else instance


def node_name(labels: Mapping[str, str], order: Sequence[str] | None = None) -> str | None:
    """The node a series is about, or None when no identifying label is present."""
    for label in order or settings.INGEST_NODE_LABELS:
        value = labels.get(label)
        if value:
            return value
    instance = labels.get("instance")
    return _host_of_instance(instance) if instance else None
