"""Sharded ingest: one cycle of a node-level family split into shards that any worker can run.

The cycle task fixes the window end once, discovers the family's nodes in
Prometheus and fans out one ``ShardOrder`` per shard (a stable CRC32 group of
node names). A shard fetches only its nodes (a ``=~"a|b|…"`` matcher on the
node label added to every metric selector) and, per chunk, in ONE transaction:
stores its rows (idempotent keys), advances its ``ShardCursor`` and, under the
family cursor's row lock, moves the family cursor to the minimum of the shard
cursors (refreshing rollups over what that minimum newly covers). A worker
killed mid-shard leaves its shard cursor behind; the next cycle's order for the
shard starts from there, so no gap. Families whose dialect has no node label
(treydock IB) and families that are not node-level run as one shard or unsharded.
"""

from __future__ import annotations

import logging
import re
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import TypedDict

from django.conf import settings
from django.db import connection, transaction

from . import rollups, services
from .events import ingest_committed, publish_committed
from .health import record_cycle
from .identity import resolver_for
from .models import Family, IngestCursor, IngestCycle, ShardCursor
from .outcome import CycleOutcome
from .prometheus import PrometheusClient, PrometheusError, PrometheusUnavailable
from .queries import DCGM_MARKERS, IB_MARKERS
from .sources import source_for
from .sources.base import Batch, Source, StoreResult, Window

log = logging.getLogger(__name__)
SHARD_LOCK_NAMESPACE = 0x1C58
#: Node-level families and the marker metric per dialect used to discover their nodes.
SHARDED_FAMILIES: dict[str, tuple[dict[str, str], str]] = {
    Family.GPU: (DCGM_MARKERS, "INGEST_DCGM_DIALECT"),
    Family.IB: ({"node_exporter": IB_MARKERS["node_exporter"]}, "INGEST_IB_DIALECT"),
}
_REGEX_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_IDENTIFIER = re.compile(r"(?<![\w:\"'])([A-Za-z_:][\w:]*)(\{)?")


class ShardOrder(TypedDict):
    """Task kwargs of one shard: its nodes as values of ``label`` (None: every series)."""

    family: str
    shard: int
    shards: int
    label: str | None
    values: list[str]
    until: str


def shard_of(name: str, shards: int) -> int:
    """The stable shard of a node name (CRC32, the same in every process and release)."""
    return zlib.crc32(name.encode()) % shards


def regex_matcher(label: str, values: list[str]) -> str:
    """``label=~"v1|v2"`` with RE2 metacharacters escaped (plain literals keep Prometheus's set fast path)."""
    escaped = (_REGEX_SPECIAL.sub(r"\\\1", value) for value in sorted(values))
    body = "|".join(escaped).replace("\\", "\\\\").replace('"', '\\"')
    return f'{label}=~"{body}"'


def scope(promql: str, matcher: str, metrics: set[str]) -> str:
    """Add ``matcher`` to every selector of a metric in ``metrics`` within ``promql``."""

    def add(match: re.Match[str]) -> str:
        name, brace = match.group(1), match.group(2)
        if name not in metrics:
            return match.group(0)
        return f"{name}{{{matcher}," if brace else f"{name}{{{matcher}}}"

    return _IDENTIFIER.sub(add, promql)


class ScopedClient(PrometheusClient):
    """A client whose queries see only one shard's nodes (shares the base client's session)."""

    def __init__(  # noqa: D107
        self, base: PrometheusClient, matcher: str, shard: tuple[int, int] | None = None
    ) -> None:
        self.url, self.timeout, self.connection = base.url, base.timeout, base.connection
        self.shown_url, self.deadline, self.max_bytes = (
            base.shown_url,
            base.deadline,
            base.max_bytes,
        )
        self.base, self.matcher = base, matcher
        # (index, count): sources whose series carry no node label (treydock IB) read through
        # ``base`` and keep the nodes with ``owns`` (each node in exactly one shard).
        self.shard = shard

    def owns(self, node: str) -> bool:
        """True when ``node`` belongs to this shard (always, for a client without a shard)."""
        return self.shard is None or shard_of(node, self.shard[1]) == self.shard[0]

    def known_metrics(self) -> set[str]:
        """The base client's (cached) metric names: the names ``scope`` scopes."""
        return self.base.known_metrics()

    def scoped(self, promql: str) -> str:
        """``promql`` with the shard's matcher on every selector of a known metric."""
        return scope(promql, self.matcher, self.known_metrics())


# --- planning (the cycle task) ----------------------------------------------


def discover_nodes(
    client: PrometheusClient, family: str, since: datetime, until: datetime
) -> tuple[str, dict[str, str]] | None:
    """(node label, label value → node name) for the family's series seen in (since, until].

    None when the family's dialect has no node label, or its series name nodes
    through different labels (one regex matcher could not select a shard).
    """
    markers, dialect_setting = SHARDED_FAMILIES[family]
    forced = getattr(settings, dialect_setting)
    known = client.known_metrics()
    dialect = (
        forced if forced != "auto" else next((d for d, m in markers.items() if m in known), "")
    )
    if dialect not in markers:
        return None
    labels = [*settings.INGEST_NODE_LABELS, "instance"]
    seconds = max(int((until - since).total_seconds()), settings.INGEST_STEP_SECONDS)
    answer = client.query(
        f"group by ({', '.join(labels)}) (last_over_time({markers[dialect]}[{seconds}s]))", until
    )
    used: set[str] = set()
    values: dict[str, str] = {}
    resolver = resolver_for(client, since, until)
    for series in answer.series:
        label = next((name for name in labels if series.labels.get(name)), None)
        if label is None:
            continue
        # Grouped by the node it resolves to; an unresolved series still goes to a shard,
        # which skips and counts it.
        used.add(label)
        values[series.labels[label]] = resolver.node_of(series.labels) or series.labels[label]
    if len(used) > 1:
        return None
    # No node at all in the window: every shard is empty and only advances its cursor.
    return (used.pop(), values) if used else ("instance", {})


def plan_orders(
    family: str, client: PrometheusClient, until: datetime, shards: int
) -> list[ShardOrder]:
    """One order per shard of ``family`` for the window ending at ``until``."""
    since = _family_start(family, until)
    found = discover_nodes(client, family, since, until) if family in SHARDED_FAMILIES else None
    if found is None:
        return [
            ShardOrder(
                family=family, shard=0, shards=1, label=None, values=[], until=until.isoformat()
            )
        ]
    label, values = found
    groups: list[list[str]] = [[] for _ in range(shards)]
    for value, name in values.items():
        groups[shard_of(name, shards)].append(value)
    return [
        ShardOrder(family=family, shard=index, shards=shards, label=label, values=sorted(group),
                   until=until.isoformat())
        for index, group in enumerate(groups)
    ]  # fmt: skip


def _family_start(family: str, until: datetime) -> datetime:
    start, _end = services.plan_window(family, None, until)
    earliest = ShardCursor.objects.filter(family=family).order_by("covered_until").first()
    return min(start, earliest.covered_until) if earliest else start


def run_cycle(
    send: Callable[[list[ShardOrder]], None],
    until: datetime | None = None,
    families: list[str] | None = None,
    client: PrometheusClient | None = None,
) -> dict[str, str]:
    """Fan out the node-level families' shards through ``send`` (once per family); run the
    small families here."""
    client = client or PrometheusClient()
    step = settings.INGEST_STEP_SECONDS
    end = services.align_down(
        until or services.utcnow() - timedelta(seconds=settings.INGEST_SETTLE_SECONDS), step
    )
    chosen = families or services.DEFAULT_FAMILIES
    statuses: dict[str, str] = {}
    for family in (f for f in chosen if f in SHARDED_FAMILIES):
        try:
            planned = plan_orders(family, client, end, settings.INGEST_SHARDS)
        except PrometheusError as exc:
            statuses[family] = f"error: {exc}"[:200]
            continue
        send(planned)  # now: workers start on it while the next family is planned
        statuses[family] = f"sharded:{len(planned)}"
    rest = [f for f in chosen if f not in SHARDED_FAMILIES]
    if rest:
        for outcome in services.ingest_all(until=end, client=client, families=rest):
            statuses[outcome.family] = outcome.status
    return statuses


# --- one shard (the shard task) ---------------------------------------------


@contextmanager
def shard_lock(order: ShardOrder) -> Iterator[bool]:
    """A session advisory lock per (family, shard count, shard): a redelivered order waits its turn."""
    key = zlib.crc32(f"{order['family']}:{order['shards']}:{order['shard']}".encode()) & 0x7FFFFFFF
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [SHARD_LOCK_NAMESPACE, key])
        acquired = bool(cursor.fetchone()[0])
    try:
        yield acquired
    finally:
        if acquired:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [SHARD_LOCK_NAMESPACE, key])


def _shard_cursor(order: ShardOrder, until: datetime) -> ShardCursor:
    """The shard's cursor; a new one starts where the family cursor (or the initial lookback) is."""
    start, _end = services.plan_window(order["family"], None, until)
    # The family cursor exists from the start of the first window, so the rollups of
    # everything the shards store are refreshed as the minimum moves past it.
    IngestCursor.objects.get_or_create(family=order["family"], defaults={"covered_until": start})
    cursor, _ = ShardCursor.objects.get_or_create(
        family=order["family"], shards=order["shards"], shard=order["shard"],
        defaults={"covered_until": start},
    )  # fmt: skip
    return cursor


def _advance_family(family: str, shards: int) -> tuple[datetime, datetime] | None:
    """Family cursor := min of the shard cursors (row-locked); returns (old, new) when it moved."""
    if ShardCursor.objects.filter(family=family, shards=shards).count() < shards:
        return None  # a shard has not started yet: its window is not covered
    family_cursor = IngestCursor.objects.select_for_update().get(family=family)
    # Re-read after the lock: another shard may have committed while we waited.
    low = min(
        ShardCursor.objects.filter(family=family, shards=shards).values_list(
            "covered_until", flat=True
        )
    )
    if low <= family_cursor.covered_until:
        return None
    old, family_cursor.covered_until = family_cursor.covered_until, low
    family_cursor.save(update_fields=["covered_until"])
    return old, low


def commit_shard_chunk(
    order: ShardOrder, source: Source, batch: Batch, published: list[tuple[datetime, datetime]]
) -> int:
    """Store one chunk, advance the shard cursor and maybe the family cursor: one transaction."""
    window = batch.window
    with transaction.atomic():
        rows = source.store(batch).rows if batch.payload is not None else 0
        ShardCursor.objects.filter(
            family=order["family"], shards=order["shards"], shard=order["shard"],
            covered_until__lt=window.end,
        ).update(covered_until=window.end)  # fmt: skip
        moved = _advance_family(order["family"], order["shards"])
        if moved:
            rollups.refresh(order["family"], *moved)
            event = ingest_committed([order["family"]], moved[1].isoformat(), rows)
            transaction.on_commit(lambda: publish_committed(event))
            published.append(moved)
    return rows


class _EmptyShard(Source):
    """A shard with no nodes: nothing to fetch, its cursor still advances."""

    def __init__(self, family: str) -> None:  # noqa: D107
        self.family = family  # type: ignore[misc]

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """No query: the batch carries no payload."""
        return Batch(self.family, window)

    def store(self, batch: Batch) -> StoreResult:
        """Never called (``commit_shard_chunk`` skips batches without payload)."""
        raise AssertionError("an empty shard stores nothing")


def ingest_shard(order: ShardOrder, client: PrometheusClient | None = None) -> CycleOutcome:
    """Run one shard's window up to ``order["until"]``, from its own cursor."""
    family, started = order["family"], time.monotonic()
    outcome = CycleOutcome(family)
    until = datetime.fromisoformat(order["until"])
    with shard_lock(order) as acquired:
        if not acquired:
            outcome.status = "locked"
            return outcome
        cursor = _shard_cursor(order, until)
        outcome.window_start, outcome.window_end = cursor.covered_until, until
        step = settings.INGEST_STEP_SECONDS
        windows = services.split(cursor.covered_until, until, step, settings.INGEST_CHUNK_STEPS)
        if not windows:
            outcome.status = "idle"
            return outcome
        cycle = IngestCycle.objects.create(
            family=family, started_at=services.utcnow(), window_start=cursor.covered_until,
            window_end=until,
        )  # fmt: skip
        _run(order, client or PrometheusClient(), windows, outcome)
        outcome.duration = time.monotonic() - started
        record_cycle(cycle, outcome)
    return outcome


def _run(
    order: ShardOrder,
    client: PrometheusClient,
    windows: list[Window],
    outcome: CycleOutcome,
) -> None:
    published: list[tuple[datetime, datetime]] = []
    # An IB shard with no node_exporter node may still own treydock-only nodes.
    fabric = order["family"] == Family.IB and IB_MARKERS["treydock"] in client.known_metrics()
    empty = order["label"] is not None and not order["values"] and not fabric
    source = _EmptyShard(order["family"]) if empty else source_for(order["family"])
    scoped = (
        client
        if order["label"] is None
        else ScopedClient(
            client,
            regex_matcher(order["label"], order["values"]),
            (order["shard"], order["shards"]),
        )
    )

    def commit(chunk_source: Source, batch: Batch) -> int:
        return commit_shard_chunk(order, chunk_source, batch, published)

    try:
        services.run_chunks(source, scoped, windows, outcome, None, commit)
    except PrometheusUnavailable as exc:
        services.open_outage(str(exc))
        outcome.status, outcome.error = "error", str(exc)
    except PrometheusError as exc:
        outcome.status, outcome.error = "error", str(exc)
    except Exception as exc:  # noqa: BLE001 - one shard's failure must not stop the others
        log.exception(
            "ingest shard %s %s/%s failed", order["family"], order["shard"], order["shards"]
        )
        outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"
