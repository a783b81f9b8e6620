"""InfiniBand family: per node port throughput, wait, error increases, state and rate.

Dialects (docs/infiniband.md): ``node_exporter`` (node from node identity,
``device``/``port`` labels) and ``treydock`` (one exporter for the fabric; a
port's ``guid`` maps to its node and device through ``infiniband_hca_info``'s
``hca`` label, ``normalize.split_hca``). Auto-detection reads every dialect
present and merges them into ONE port model keyed by (node, device, port):
each counter of a port comes from node_exporter when node_exporter has it for
that port anywhere in the window, else from treydock. INGEST_IB_DIALECT forces
one dialect. A device that reports no IB counter at all (iWARP ``i40iw0``,
``irdma``: node_exporter still exports its state and rate) is not an IB port.
A counter a port does not export is NULL; a counter pegged at its width's
maximum (``SPEC``) sets its bit in ``saturated`` and its value is NULL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings

from ..identity import NodeResolver, node_name, resolver_for
from ..models import Family
from ..normalize import (
    Collected,
    Column,
    Folded,
    counter_max,
    int_label,
    saturation_masks,
    split_hca,
    steps,
)
from ..prometheus import PrometheusClient
from ..queries import IB, IB_MARKERS, promql
from ..sampling import SAMPLED_AT, Sampling, Stepper
from ..step_reads import read_steps
from ..store import (
    IB_TABLE,
    insert_rows,
    stored_ib_values,
    timestamps,
    upsert_nodes,
    upsert_ports,
)
from .base import Batch, Source, StoreResult, Window, fetch_sampling
from .dcgm import node_by

#: Stored columns in ``IB_TABLE`` order (before ``saturated``): saturation bit and the value
#: the counter sticks at. Widths: Linux drivers/infiniband/core/sysfs.c PORT_PMA_ATTR (what
#: node_exporter reads) = IBA PortCounters; data/packets 32-bit there unless the HCA has the
#: extended counters (64-bit, never pegged in practice); data are x4 (bytes, not words).
SPEC = (
    Column("tx_bytes", "rate", 1 << 0, counter_max(32, 4)),
    Column("rx_bytes", "rate", 1 << 1, counter_max(32, 4)),
    Column("tx_packets", "rate", 1 << 2, counter_max(32)),
    Column("rx_packets", "rate", 1 << 3, counter_max(32)),
    Column("xmit_wait", "rate", 1 << 4, counter_max(32)),
    Column("symbol_errors", "increase", 1 << 5, counter_max(16)),
    Column("link_downed", "increase", 1 << 6, counter_max(8)),
    Column("link_error_recovery", "increase", 1 << 7, counter_max(8)),
    Column("rcv_errors", "increase", 1 << 8, counter_max(16)),
    Column("local_link_integrity", "increase", 1 << 9, counter_max(4)),
    Column("excessive_buffer_overrun", "increase", 1 << 10, counter_max(4)),
    Column("rate", "gauge"),
    Column("state", "gauge"),
    Column("phys_state", "gauge"),
)
SATURATION_BITS = {column.name: column.saturation_bit for column in SPEC if column.saturation_bit}
COUNTERS = tuple(column.name for column in SPEC if column.kind != "gauge")
SMALLINT_COLUMNS = tuple(i for i, column in enumerate(SPEC) if column.name.endswith("state"))
#: Dialects in merge preference order (the first that has a counter for a port wins).
PREFERENCE = ("node_exporter", "treydock")
NO_IB_COUNTERS = "no_ib_counters"
PortKey = tuple[str, str, int]  # node, device, port
FOREIGN: PortKey = ("", "", -1)  # a port of a node another shard owns


@dataclass
class DialectPull:
    """One dialect's answers folded by port key, the GUIDs it named, the CAs it skipped, and
    when each of its scrape units (a node's node_exporter, a treydock HCA) was sampled."""

    dialect: str
    collected: Collected
    guids: dict[PortKey, str] = field(default_factory=dict)
    skipped_cas: dict[str, set[str]] = field(default_factory=dict)
    sampled_at: Folded = field(default_factory=dict)

    def unit(self, key: PortKey) -> tuple[str, ...]:
        """The scrape unit of a port: its node (node_exporter) or its HCA (treydock)."""
        return (
            (self.dialect, key[0], key[1]) if self.dialect == "treydock" else (self.dialect, key[0])
        )


@dataclass
class IbPayload:
    """Rows keyed by (node, device, port, guid); ids are resolved in ``store``."""

    rows: list[tuple] = field(default_factory=list)
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    times: list[int] = field(default_factory=list)


def node_exporter_key(
    labels: Mapping[str, str], names: NodeResolver | None = None
) -> PortKey | None:
    """(node, device, port) of a node_exporter series (node, device: ``ingest.identity``)."""
    names = names or NodeResolver()
    node, port = node_name(labels, names), int_label(labels, "port")
    device = names.device(labels.get("device"), labels) if node is not None else None
    return None if node is None or port is None or not device else (node, device, port)


class TreydockKeyer:
    """Maps treydock's (guid, port) to (node, device, port); records GUIDs and skipped CAs."""

    def __init__(  # noqa: D107
        self,
        hca_by_guid: Mapping[str, str],
        pulled: DialectPull,
        owns: Callable[[str], bool] | None = None,
        names: NodeResolver | None = None,
    ) -> None:
        self.hca_by_guid, self.pulled, self.owns = hca_by_guid, pulled, owns
        self.names = names or NodeResolver()

    def __call__(self, labels: Mapping[str, str]) -> PortKey | None:
        """The port key, or None (and the CA counted under its skip reason)."""
        guid, port = labels.get("guid", ""), int_label(labels, "port")
        name = split_hca(self.hca_by_guid.get(guid, ""))
        if name.skip:
            self.pulled.skipped_cas.setdefault(name.skip, set()).add(guid)
            return None
        if port is None:
            return None
        located = self.names.located((name.node, name.device), guid, labels)
        if located is None:  # a node name or device that does not fit (counted by the resolver)
            return None
        node, device = located
        if self.owns is not None and not self.owns(node):
            return FOREIGN  # another shard's node: dropped after folding, not "skipped"
        key = (node, device, port)
        self.pulled.guids[key] = guid
        return key


def dialects_present(client: PrometheusClient) -> list[str]:
    """The dialects to read: the forced one, else every one whose marker Prometheus has."""
    forced = settings.INGEST_IB_DIALECT
    if forced != "auto":
        return [forced]
    known = client.known_metrics()
    found = [d for d in PREFERENCE if IB_MARKERS[d] in known]
    return found or [PREFERENCE[0]]


def merge(pulls: list[DialectPull]) -> tuple[Collected, dict[str, dict[PortKey, DialectPull]]]:
    """One port model: per (port, counter), the first dialect in ``pulls`` that has it; and,
    with several dialects, which pull each (column, port) came from (its scrape unit)."""
    if len(pulls) == 1:  # the common case: nothing to merge, no copy (the hot path at scale)
        return pulls[0].collected, {}
    merged = Collected(skipped=sum(p.collected.skipped for p in pulls))
    origin: dict[str, dict[PortKey, DialectPull]] = {}
    for column in SPEC:
        into: Folded = {}
        have: set = set()
        for pulled in pulls:
            source = pulled.collected.columns.get(column.name, {})
            for ts, values in source.items():
                fresh = {k: v for k, v in values.items() if k not in have}
                if fresh:
                    into.setdefault(ts, {}).update(fresh)
            keys = pulled.collected.keys_of(column.name) - have
            origin.setdefault(column.name, {}).update(dict.fromkeys(keys, pulled))  # type: ignore[arg-type]
            have |= keys
        if into:
            merged.columns[column.name] = into
    return merged, origin


def sampling_of(
    pulls: list[DialectPull],
    origin: Mapping[str, Mapping[PortKey, DialectPull]],
    keys: list[PortKey],
    step: int,
) -> tuple[Sampling | None, Callable[[str], list[tuple[str, ...]]]]:
    """The merged pulls' sample times and, per column, each key's scrape unit."""
    at: Folded = {}
    for pulled in pulls:
        for ts, sampled in pulled.sampled_at.items():
            at.setdefault(ts, {}).update(sampled)
    sampling = Sampling.of(at, step)
    if not origin:
        every = [pulls[0].unit(key) for key in keys]
        return sampling, lambda _column: every
    shared: dict[tuple[int, ...], list[tuple[str, ...]]] = {}
    by_column: dict[str, list[tuple[str, ...]]] = {}
    for column in SPEC:
        source = origin.get(column.name, {})
        picks = [source.get(key, pulls[0]) for key in keys]
        signature = tuple(id(p) for p in picks)
        if signature not in shared:
            shared[signature] = [p.unit(key) for p, key in zip(picks, keys, strict=True)]
        by_column[column.name] = shared[signature]
    return sampling, by_column.__getitem__


def ib_ports(collected: Collected) -> tuple[list[PortKey], int]:
    """Keys with at least one IB counter in the window (sorted), and how many devices had none."""
    with_counters: set = set().union(*(collected.keys_of(name) for name in COUNTERS))
    every = collected.keys()
    return sorted(with_counters), len(every) - len(with_counters)


def build_rows(
    collected: Collected,
    keys: list[PortKey],
    guids: Mapping[PortKey, str],
    step: int,
    payload: IbPayload,
    stepper: Stepper | None = None,
) -> Stepper:
    """Per (port, step) rows of ``keys``: values in SPEC order, then the saturation mask.

    ``stepper`` (with the pulls' sample times, ``sampling_of``) makes counters exact at any
    scrape interval and a vanished exporter a gap; without one, values are over the step.
    """
    stepper = stepper or Stepper(collected, keys, step)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    full = [(*key, guids.get(key, "")) for key in keys]
    for ts in payload.times[1:]:
        columns = [stepper.values(column, ts) for column in SPEC]
        for index in SMALLINT_COLUMNS:
            columns[index] = [None if v is None else int(v) for v in columns[index]]
        masks = saturation_masks(collected, SPEC, ts)
        rows = [
            (ts, port, *values, masks.get(key, 0))
            for key, port, values in zip(keys, full, zip(*columns, strict=True), strict=True)
            if key in masks or values.count(None) < len(SPEC)
        ]
        payload.rows += rows
        for node in {row[1][0] for row in rows}:
            first.setdefault(node, ts)
            last[node] = ts
    payload.seen = {node: (ts, last[node]) for node, ts in first.items()}
    return stepper


def skip_notes(pulls: list[DialectPull], no_counters: int, stateless: int) -> list[str]:
    """Per-reason skip counts for the family's notes (CAs by GUID, devices by port)."""
    notes = [f"dialect={'+'.join(p.dialect for p in pulls)}"]
    for pulled in pulls:
        for reason, guids in sorted(pulled.skipped_cas.items()):
            notes.append(f"skipped {pulled.dialect} CAs {reason}={len(guids)}")
    if no_counters:
        notes.append(f"skipped devices {NO_IB_COUNTERS}={no_counters}")
    if stateless:
        notes.append(f"ports without port state (treydock exports none): {stateless}")
    return notes


def preferred(
    hcas: Mapping[str, str],
    pulled: DialectPull,
    earlier: list[DialectPull],
    names: NodeResolver,
    owns: Callable[[str], bool] | None,
) -> set[str]:
    """The treydock columns the earlier (preferred) dialects already have for every host HCA.

    Those would be dropped by ``merge``, so they are not fetched: with node_exporter on every
    node, treydock's counters are not read at all. Also records the GUIDs of the earlier
    dialects' ports and the CAs skipped (what folding treydock's counters would record).
    """
    devices: dict[tuple[str, str], str] = {}
    for guid, hca in hcas.items():
        name = split_hca(hca)
        if name.skip:
            pulled.skipped_cas.setdefault(name.skip, set()).add(guid)
            continue
        located = names.located((name.node, name.device), guid, {})
        if located is not None and (owns is None or owns(located[0])):
            devices[located] = guid
    for earlier_pull in earlier:
        for key in earlier_pull.collected.keys():
            found = devices.get(key[:2])  # type: ignore[index]
            if found:
                pulled.guids[key] = found  # type: ignore[index]
    covered = set()
    for column in IB["treydock"]:
        have = {key[:2] for e in earlier for key in e.collected.keys_of(column)}  # type: ignore[index]
        if earlier and devices.keys() <= have:
            covered.add(column)
    return covered


class IbSource(Source):
    """IB exporters → ``IbPort`` and ``IbSample`` rows."""

    family = Family.IB

    def _pull_dialect(
        self,
        client: PrometheusClient,
        dialect: str,
        window: Window,
        names: NodeResolver,
        earlier: list[DialectPull] | None = None,
    ) -> DialectPull:
        pulled = DialectPull(dialect, Collected())
        key_of: Callable[[Mapping[str, str]], PortKey | None] = partial(
            node_exporter_key, names=names
        )
        covered: set[str] = set()
        if dialect == "treydock":
            # treydock has no node label: a shard reads the whole fabric, keeps its own nodes.
            client, owns = getattr(client, "base", client), getattr(client, "owns", None)
            span = int((window.end - window.start).total_seconds()) + 300
            info = client.query(promql("ib", dialect, "hca_info", range=f"{span}s"), at=window.end)
            hcas = {s.labels.get("guid", ""): s.labels.get("hca", "") for s in info.series}
            key_of = TreydockKeyer(hcas, pulled, owns, names)
            pulled.collected.skipped += info.skipped
            covered = preferred(hcas, pulled, earlier or [], names, owns)
        by = node_by()
        # treydock has no port state; what a preferred dialect has is not fetched twice.
        columns = [c for c in SPEC if c.name in IB[dialect] and c.name not in covered]
        if not columns:
            return pulled
        queries = [
            (promql("ib", dialect, c.name, by=by), window.fetch_start(c.kind)) for c in columns
        ]
        answers = read_steps(client, queries, window.end, window.step)
        pulled.collected.add_answers([c.name for c in columns], answers, key_of)
        for folded in pulled.collected.columns.values():
            for values in folded.values():
                values.pop(FOREIGN, None)
        pulled.sampled_at = self._sampled_at(client, pulled, window, by, names)
        return pulled

    @staticmethod
    def _sampled_at(
        client: PrometheusClient, pulled: DialectPull, window: Window, by: str, names: NodeResolver
    ) -> Folded:
        """When each scrape unit of the dialect was sampled (empty if the backend says not)."""
        unit_of: Callable[[Mapping[str, str]], tuple[str, ...] | None]
        if pulled.dialect == "treydock":
            hcas = {guid: pulled.unit(key) for key, guid in pulled.guids.items()}
            unit_of = lambda labels: hcas.get(labels.get("guid", ""))  # noqa: E731
        else:
            unit_of = lambda labels: (  # noqa: E731
                None if (node := node_name(labels, names)) is None else (pulled.dialect, node)
            )
        query = promql("ib", pulled.dialect, SAMPLED_AT, by=by)
        sampling = fetch_sampling(client, query, window, unit_of)
        return sampling.at if sampling is not None else {}

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """Per dialect present, one read per column (counters from the window start)."""
        names = resolver_for(client, window.start, window.end)
        pulls: list[DialectPull] = []
        for dialect in dialects_present(client):
            pulls.append(self._pull_dialect(client, dialect, window, names, pulls))
        collected, origin = merge(pulls)
        keys, no_counters = ib_ports(collected)
        guids: dict[PortKey, str] = {}
        for pulled in reversed(pulls):
            guids.update(pulled.guids)
        start, end = int(window.start.timestamp()), int(window.end.timestamp())
        payload = IbPayload(times=[start, *steps(start, end, window.step)])
        sampling, units = sampling_of(pulls, origin, keys, window.step)
        dialects = "+".join(p.dialect for p in pulls)
        carry_in = self.carry_in(dialects, window, lambda: stored_ib_values(window.start, COUNTERS))
        stepper = Stepper(collected, keys, window.step, sampling, units, carry_in)
        build_rows(collected, keys, guids, window.step, payload, stepper)
        self.carried[dialects] = (end, stepper.carry_out(COUNTERS))
        return Batch(
            self.family,
            window,
            payload=payload,
            skipped=collected.skipped,
            notes=skip_notes(pulls, no_counters, len(set(keys) - collected.keys_of("state"))),
            unfit=names.unfit(),
        )

    def store(self, batch: Batch) -> StoreResult:
        """Nodes and ports upserted, samples inserted once."""
        payload: IbPayload = batch.payload
        stamps = timestamps(payload.times)
        node_ids = upsert_nodes({n: (stamps[a], stamps[b]) for n, (a, b) in payload.seen.items()})
        keys = {row[1] for row in payload.rows}
        port_ids = upsert_ports((node_ids[n], d, p, g) for n, d, p, g in keys)
        rows = [
            (
                stamps[r[0]],
                port_ids[(node_ids[r[1][0]], r[1][1], r[1][2])],
                node_ids[r[1][0]],
                *r[2:],
            )
            for r in payload.rows
        ]
        return StoreResult(rows=insert_rows(IB_TABLE, rows))
