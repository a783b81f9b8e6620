"""The node inventory: nodes, their IB ports, pool changes, the pods that held them, cursors."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from django.db.models import Max

from ..models import IngestCursor, Node, PoolChange


class NodeInfo(NamedTuple):
    """One node as the pages show it."""

    name: str
    pool: str
    leaf_switch: str
    gpu_model: str
    last_seen: datetime


class PoolChangeRow(NamedTuple):
    """A node moved to ``pool`` at ``ts``."""

    node_id: int
    ts: datetime
    pool: str


_NODE_FIELDS = ("name", "pool", "leaf_switch", "gpu_model", "last_seen")


def nodes() -> list[NodeInfo]:
    """Every node, by name."""
    return [NodeInfo._make(row) for row in Node.objects.order_by("name").values_list(*_NODE_FIELDS)]


def node(name: str) -> NodeInfo | None:
    """The node named ``name`` (None: no such node)."""
    row = Node.objects.filter(name=name).values_list(*_NODE_FIELDS).first()
    return None if row is None else NodeInfo._make(row)


def has_nodes() -> bool:
    """Whether ingest has seen any node."""
    return Node.objects.exists()


def latest_seen() -> datetime | None:
    """The latest ``last_seen`` of any node (None: no nodes)."""
    return Node.objects.aggregate(latest=Max("last_seen"))["latest"]


def node_pools() -> dict[int, str]:
    """node id → its current pool."""
    return dict(Node.objects.values_list("id", "pool"))


def pool_changes_between(start: datetime, end: datetime) -> list[PoolChangeRow]:
    """Every pool change with start <= ts <= end, oldest first."""
    rows = PoolChange.objects.filter(ts__gte=start, ts__lte=end).order_by("ts")
    return [PoolChangeRow._make(row) for row in rows.values_list("node_id", "ts", "pool")]


def pools_before(start: datetime) -> dict[int, str]:
    """node id → the pool of its last change before ``start`` (nodes with one only)."""
    rows = PoolChange.objects.filter(ts__lt=start).order_by("node_id", "-ts").distinct("node_id")
    return dict(rows.values_list("node_id", "pool"))


def covered_until(family: str) -> datetime | None:
    """How far ingest has covered ``family`` (None: not yet)."""
    cursor = IngestCursor.objects.filter(family=family)
    return cursor.values_list("covered_until", flat=True).first()


def cursor_marks() -> list[tuple[str, datetime]]:
    """(family, covered until) of every ingest cursor, by family."""
    return list(IngestCursor.objects.order_by("family").values_list("family", "covered_until"))
