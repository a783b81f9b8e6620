"""GPU family from dcgm-exporter: per-GPU gauges, NVLink bandwidth and error increases, XID events.

Dialects: ``current`` (DCGM_FI_* names, ``Hostname`` or ``hostname`` label, both
accepted through node identity) and ``legacy`` (``-o``: the 1.x names of
etc/1.x-compatibility-metrics.csv, ``uuid`` label). Detected from the metric names
Prometheus has unless INGEST_DCGM_DIALECT forces one. One read per metric the dialect
has (``step_reads``: remote read or ``query_range``), ``max by`` node labels + gpu, each folded straight into
columns by (node, gpu) (``Collected.add_answers``). The util series also carry
``modelName``, which fills ``Node.gpu_model``. docs/dcgm.md has the sources.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from django.conf import settings
from django.db import connection

from ..identity import NodeResolver, node_labels, node_name, resolver_for
from ..models import Family
from ..normalize import (
    Collected,
    Column,
    KeyOf,
    Points,
    int_label,
    steps,
    xid_events,
)
from ..prometheus import PrometheusClient, Series
from ..queries import DCGM_MARKERS, DCGM_MODEL_LABEL, GPU, promql
from ..sampling import SAMPLED_AT, CarryIn, Sampling, Stepper
from ..step_reads import read_steps
from ..store import GPU_SAMPLE_TABLE, insert_rows, stored_gpu_values, timestamps, upsert_nodes
from .base import Batch, Source, StoreResult, Window, fetch_sampling, read_answer

GAUGES = ("util", "tensor", "sm", "dram", "power", "temp")
NVLINK_ERRORS = ("nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery")
#: Hardware health (docs/dcgm.md "Hardware health"), after the value columns. The volatile DBE
#: count is kept as read (it returns to 0 only when the GPU is reset, which is what the
#: verdict needs to know); PCIe replays as per-step increases; the flags and the bitmask as read.
HEALTH = (
    Column("ecc_dbe_vol", "gauge"),
    Column("pcie_replay", "increase"),
    Column("row_remap_failure", "gauge"),
    Column("row_remap_pending", "gauge"),
    Column("clock_events", "gauge"),
)
SPEC = (
    tuple(Column(name, "gauge") for name in GAUGES)
    + tuple(Column(n, "increase") for n in NVLINK_ERRORS)
    + HEALTH
)
#: NVLink bandwidth: DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (a rate, see NVLINK_BW_UNIT_BYTES),
#: else the PROF TX + RX gauges (bytes/s).
BANDWIDTH = (
    Column("nvlink_bw", "gauge"),
    Column("nvlink_tx", "gauge"),
    Column("nvlink_rx", "gauge"),
)
FETCHED = (*SPEC, *BANDWIDTH)
COUNTER_COLUMNS = tuple(column.name for column in SPEC if column.kind != "gauge")
#: Bytes/s in one unit of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (field 449). DCGM declares the
#: field in MB/s (dcgmlib/src/dcgm_fields.cpp: DCGM_FIELD_UNIT_BW_MBPS) and computes it as
#: the KiB delta of NVML's NVLINK_THROUGHPUT_DATA_{RX,TX} per second / 1000
#: (DcgmCacheManager::ReadAndCacheNvLinkBandwidth): one unit = 1000 KiB/s = 1,024,000 B/s.
NVLINK_BW_UNIT_BYTES = 1000 * 1024
MODEL_MAX_LENGTH = 100  # Node.gpu_model
GpuKey = tuple[str, int]


def node_by() -> str:
    """The ``by (…)`` label list that keeps node identity (``identity.node_labels``)."""
    return ", ".join(node_labels())


def gpu_key(labels: Mapping[str, str], names: NodeResolver | None = None) -> GpuKey | None:
    """(node, gpu index) of a series, or None when either is missing (node: ``ingest.identity``)."""
    node, gpu = node_name(labels, names), int_label(labels, "gpu")
    return None if node is None or gpu is None else (node, gpu)


@dataclass
class GpuPayload:
    """Rows keyed by node name (ids are resolved in ``store``) and raw XID tracks.

    ``xid_tracks`` holds only GPUs with a non-zero XID value in the window (an
    all-zero GPU can have no event); ``xid_nodes`` names every node XID series came from.
    """

    rows: list[tuple] = field(default_factory=list)
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    xid_tracks: dict[GpuKey, list[tuple[str, Points]]] = field(default_factory=dict)
    xid_nodes: set[str] = field(default_factory=set)
    times: list[int] = field(default_factory=list)
    models: dict[str, str] = field(default_factory=dict)


def nvlink_bandwidth(stepper: Stepper, with_counter: set[Hashable], ts: int) -> list[float | None]:
    """Bytes/s over NVLink per key: the DCGM bandwidth field converted to bytes/s where the
    GPU has it in the window (``with_counter``), else PROF TX + RX gauges."""
    keys = stepper.keys
    total, tx, rx = (stepper.values(column, ts) for column in BANDWIDTH)
    return [
        (None if rate is None else rate * NVLINK_BW_UNIT_BYTES)
        if key in with_counter
        else (None if sent is None and received is None else (sent or 0.0) + (received or 0.0))
        for key, rate, sent, received in zip(keys, total, tx, rx, strict=True)
    ]


def build_rows(
    collected: Collected,
    times: list[int],
    step: int,
    payload: GpuPayload,
    sampling: Sampling | None = None,
    carry_in: CarryIn | None = None,
) -> Stepper:
    """Per (node, gpu, step) rows in ``GPU_SAMPLE_TABLE`` column order; empty steps are not rows.

    ``sampling`` (per node: dcgm-exporter samples every GPU of a node at once) makes
    counters exact at any scrape interval and a vanished exporter a gap (``ingest.sampling``).
    """
    keys, with_counter = collected.keys(), collected.keys_of("nvlink_bw")
    nodes = [key[0] for key in keys]
    stepper = Stepper(collected, keys, step, sampling, lambda _column: nodes, carry_in)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    width = len(SPEC) + 1
    for ts in times:
        columns = [stepper.values(column, ts) for column in SPEC]
        columns.insert(6, nvlink_bandwidth(stepper, with_counter, ts))
        rows = [
            (ts, *key, *values)  # type: ignore[misc]
            for key, values in zip(keys, zip(*columns, strict=True), strict=True)
            if values.count(None) < width
        ]
        payload.rows += rows
        for node in {row[1] for row in rows}:
            first.setdefault(node, ts)
            last[node] = ts
    payload.seen = {node: (ts, last[node]) for node, ts in first.items()}
    return stepper


def collect_xids(
    series: list[Series],
    payload: GpuPayload,
    key_of: Callable[[Mapping[str, str]], GpuKey | None] = gpu_key,
) -> int:
    """Keep the XID tracks of GPUs with a non-zero value; returns the points skipped (no key)."""
    skipped = 0
    tracks: dict[GpuKey, list[tuple[str, Points]]] = {}
    for item in series:
        key = key_of(item.labels)
        if key is None:
            skipped += len(item.points)
            continue
        payload.xid_nodes.add(key[0])
        tracks.setdefault(key, []).append((item.labels.get("err_msg", ""), dict(item.points)))
    payload.xid_tracks = {
        key: gpu_tracks
        for key, gpu_tracks in tracks.items()
        if any(any(points.values()) for _msg, points in gpu_tracks)
    }
    return skipped


def model_recorder(models: dict[str, str], gpu_key_of: KeyOf = gpu_key) -> KeyOf:
    """``gpu_key_of`` that also records each node's ``modelName`` (run once per label set)."""

    def key_of(labels: Mapping[str, str]) -> GpuKey | None:
        key = gpu_key_of(labels)
        model = labels.get(DCGM_MODEL_LABEL, "").strip()
        if key is not None and model:
            models[key[0]] = model[:MODEL_MAX_LENGTH]
        return key

    return key_of


def store_gpu_models(models: Mapping[str, str], node_ids: Mapping[str, int]) -> None:
    """Set ``Node.gpu_model`` where it differs from what dcgm-exporter reports."""
    pairs = sorted((node_ids[node], model) for node, model in models.items() if node in node_ids)
    if not pairs:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ingest_node n SET gpu_model = m.model "
            "FROM unnest(%s::bigint[], %s::text[]) AS m(id, model) "
            "WHERE n.id = m.id AND n.gpu_model IS DISTINCT FROM m.model",
            [[p[0] for p in pairs], [p[1] for p in pairs]],
        )


class GpuSource(Source):
    """dcgm-exporter → ``GpuSample`` rows and ``XidEvent`` rows."""

    family = Family.GPU

    def pull(self, client: PrometheusClient, window: Window) -> Batch:
        """One read per metric over the window's steps (a counter's from its context)."""
        dialect = client.detect_dialect(DCGM_MARKERS, settings.INGEST_DCGM_DIALECT)
        collected, by = Collected(), node_by()
        fetched = [column for column in FETCHED if column.name in GPU[dialect]]
        queries = [
            (promql("gpu", dialect, column.name, by=by), window.fetch_start(column.kind))
            for column in fetched
        ]
        names = resolver_for(client, window.start, window.end)
        key_of = partial(gpu_key, names=names)
        answers = read_steps(client, queries, window.end, window.step)
        start, end = int(window.start.timestamp()), int(window.end.timestamp())
        payload = GpuPayload(times=[start, *steps(start, end, window.step)])
        collected.add_answers(
            [column.name for column in fetched], answers, model_recorder(payload.models, key_of)
        )
        sampling = fetch_sampling(
            client,
            promql("gpu", dialect, SAMPLED_AT, by=by),
            window,
            lambda labels: node_name(labels, names),
        )
        carry_in = self.carry_in(
            dialect, window, lambda: stored_gpu_values(window.start, COUNTER_COLUMNS)
        )
        stepper = build_rows(collected, payload.times[1:], window.step, payload, sampling, carry_in)
        self.carried[dialect] = (end, stepper.carry_out(COUNTER_COLUMNS))
        xids = read_answer(client, promql("gpu", dialect, "xid", by=by), window)
        skipped = collected.skipped + xids.skipped + collect_xids(xids.series, payload, key_of)
        return Batch(
            self.family, window, payload=payload, skipped=skipped, notes=[f"dialect={dialect}"],
            unfit=names.unfit(),
        )  # fmt: skip

    def store(self, batch: Batch) -> StoreResult:
        """Nodes upserted, samples inserted once, new XID codes recorded as events."""
        payload: GpuPayload = batch.payload
        stamps = timestamps(payload.times)
        names = set(payload.seen) | payload.xid_nodes
        seen = {n: payload.seen.get(n, (payload.times[-1], payload.times[-1])) for n in names}
        node_ids = upsert_nodes({n: (stamps[a], stamps[b]) for n, (a, b) in seen.items()})
        rows = [(stamps[r[0]], node_ids[r[1]], *r[2:]) for r in payload.rows]
        inserted = insert_rows(GPU_SAMPLE_TABLE, rows)
        store_gpu_models(payload.models, node_ids)
        return StoreResult(rows=inserted + store_xid_events(payload, node_ids, stamps))


def _previous_codes(before: datetime) -> dict[tuple[int, int], int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT ON (node_id, gpu) node_id, gpu, code FROM ingest_xidevent "
            "WHERE ts <= %s ORDER BY node_id, gpu, ts DESC",
            [before],
        )
        return {(n, g): code for n, g, code in cursor.fetchall()}


def store_xid_events(payload: GpuPayload, node_ids: dict[str, int], stamps: dict) -> int:
    """Insert the window's new XID codes (the last stored event is the context); returns count."""
    if not payload.xid_tracks:
        return 0
    previous = _previous_codes(stamps[payload.times[0]])
    events = []
    for (node, gpu), tracks in payload.xid_tracks.items():
        node_id = node_ids[node]
        for ts, code, message in xid_events(tracks, payload.times, previous.get((node_id, gpu))):
            events.append((node_id, gpu, stamps[ts], code, message[:500]))
    if not events:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ingest_xidevent (node_id, gpu, ts, code, message) "
            "SELECT * FROM unnest(%s::bigint[], %s::int[], %s::timestamptz[], %s::int[], %s::text[]) "
            "ON CONFLICT DO NOTHING",
            [list(column) for column in zip(*events, strict=True)],
        )
        return cursor.rowcount
