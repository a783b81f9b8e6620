"""Storage benchmark: bytes per sample (hot, compacted, Prometheus), reads old vs new, compaction cost.

    python bench/bench_storage.py [--real-nodes 64] [--real-hours 6] [--nodes 512] [--days 1]
                                  [--week-nodes 32]

Part 1, simulator data through the real pipeline: simulator history → promtool blocks →
Prometheus → ingest (GPU and IB families), then compaction. Prints bytes per stored sample
(a sample = one non-NULL value; heap + TOAST + every index, after VACUUM) of the hot rows
and of compacted history, beside Prometheus' own bytes per sample for the same metrics
(block directories ÷ their samples, ``promtool tsdb create-blocks-from openmetrics``), and
the alternative layouts measured on the same rows; then where the hot rows' bytes go and
the hot layouts tried on the same rows (``bench/storage_hot.py``).

Part 2, ``--nodes`` × ``--days`` of synthetic rows written in SQL (8 GPUs and 8 ports per
node): each read timed on the hot layout, then everything compacted (time and CPU of the
worker and of its Postgres backend), then each read again. Part 3, the same over 7 days of
``--week-nodes`` (the node page's 7 d, the run timeline and the backtest over the week: 7 days
at 512 nodes would be 165 M hot rows, ~29 GB, hours to write here). Part 4,
``--interleaved-nodes`` × ``--interleaved-hours``: the same rows in both layouts in one
database (a copy one day later stays hot), each read alternated between them, wall and CPU
(worker + Postgres backend): the ratio a shared machine's load cannot bias. Own database
(clusterwatch_bench_storage, or $BENCH_STORAGE_DB), created and dropped here. Results go to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = os.environ.get("BENCH_STORAGE_DB", "clusterwatch_bench_storage")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"
LINES: list[str] = []
HOT = ("ingest_gpusample", "ingest_gpustep", "ingest_ibsample", "ingest_ibencoded")
HISTORY = ("ingest_gpuhistory", "ingest_ibhistory")
#: Part 2's first day (any past day: no Prometheus is involved).
DAY0 = datetime(2026, 1, 5, tzinfo=UTC)


def say(line: str = "") -> None:
    """Print a result line and keep it for RESULTS.md."""
    print(line, flush=True)
    LINES.append(line)


def _sql(sql: str, params: list | dict | None = None) -> list[tuple]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def relation_bytes(parents: tuple[str, ...]) -> int:
    """Heap + TOAST + indexes of every partition of ``parents`` (after VACUUM)."""
    _sql(f"VACUUM ANALYZE {', '.join(parents)}")
    return int(
        _sql(
            "SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) FROM pg_inherits i "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ANY(%s)",
            [list(parents)],
        )[0][0]
    )


def stored_samples(source_gpu: str = "ingest_gpuhot", source_ib: str = "ingest_ibhot") -> int:
    """Non-NULL values of the GPU and IB rows (``saturated`` is a flag, not a sample)."""
    from bench.storage_hot import SAMPLE_COLUMNS

    gpu = _sql(f"SELECT sum(num_nonnulls({', '.join(SAMPLE_COLUMNS['gpu'])})) FROM {source_gpu} s")
    ib = _sql(f"SELECT sum(num_nonnulls({', '.join(SAMPLE_COLUMNS['ib'])})) FROM {source_ib} s")
    return int(gpu[0][0] or 0) + int(ib[0][0] or 0)


# --- part 1: simulator data through Prometheus and ingest -------------------------------


def stored_metric_names() -> str:
    """The exporter metrics ingest stores in the GPU and IB sample tables (current dialects)."""
    from ingest.queries import _DCGM_CURRENT, _IB_NODE_EXPORTER  # the names ingest queries

    gpu = [m for c, m in _DCGM_CURRENT.items() if c not in {"xid", "nvlink_tx", "nvlink_rx"}]
    return ",".join([*gpu, *_IB_NODE_EXPORTER.values()])


def prometheus_bytes(cluster, workdir: Path, start: float, end: float) -> tuple[int, int]:  # noqa: ANN001
    """(bytes of the TSDB block directories, samples in them) for the stored metrics only."""
    import subprocess

    from simulator import write_history
    from tests.support.prometheus import PROMTOOL

    path = workdir / "stored.om"
    write_history(cluster, start, end, 30.0, path, stored_metric_names())
    tsdb = workdir / "stored-tsdb"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(path), str(tsdb)],
                   check=True, capture_output=True)  # fmt: skip
    path.unlink()
    size = sum(f.stat().st_size for f in tsdb.rglob("*") if f.is_file())
    samples = sum(
        json.loads(m.read_text())["stats"]["numSamples"] for m in tsdb.glob("*/meta.json")
    )
    return size, samples


def real_pipeline(args: argparse.Namespace) -> None:
    """Part 1: bytes per sample of hot rows, compacted history and Prometheus, same samples."""
    from bench import storage_hot
    from bench.bench_ingest import history_prometheus
    from ingest import compaction
    from ingest.history import GPU_HISTORY, IB_HISTORY
    from ingest.prometheus import PrometheusClient
    from ingest.services import ingest_all
    from simulator import Cluster, ClusterSpec

    end = float(int(time.time()) // 3600 * 3600)
    history = timedelta(hours=args.real_hours)
    cluster = Cluster(
        ClusterSpec(nodes=args.real_nodes, seed=1, epoch=datetime.fromtimestamp(end, UTC))
    )
    with tempfile.TemporaryDirectory() as workdir:
        prometheus = history_prometheus(cluster, Path(workdir), end, history)
        try:
            ingest_all(
                since=datetime.fromtimestamp(end, UTC) - history,
                until=datetime.fromtimestamp(end - 30, UTC),
                client=PrometheusClient(prometheus.url, timeout=120),
                families=["gpu", "ib"],
            )
        finally:
            prometheus.stop()
        prom_size, prom_samples = prometheus_bytes(
            cluster, Path(workdir), end - history.total_seconds(), end
        )
    samples, hot = stored_samples(), relation_bytes(HOT)
    rows = int(
        _sql("SELECT (SELECT count(*) FROM ingest_gpuhot) + (SELECT count(*) FROM ingest_ibhot)")[
            0
        ][0]
    )
    alternatives = measure_alternatives()
    hot_lines = [
        *storage_hot.encoded_breakdown("gpu"),
        *storage_hot.encoded_breakdown("ib"),
        *storage_hot.breakdown(GPU_HISTORY),
        *storage_hot.breakdown(IB_HISTORY),
    ]
    gpu_samples, ib_samples = storage_hot.samples_by_family()
    hot_layouts = storage_hot.alternatives()
    compaction.compact(
        now=datetime.fromtimestamp(end, UTC) + timedelta(hours=30), budget_seconds=1e9
    )
    compacted = relation_bytes(HISTORY)
    again = stored_samples(_gpu_all(), _ib_all())
    say(
        f"## Part 1: {args.real_nodes} simulated nodes, {args.real_hours:g} h through Prometheus and ingest"
    )
    say()
    say(
        f"stored: {rows:,} rows, {samples:,} samples (non-NULL values; {again:,} read back after compaction)"
    )
    say("| layout | bytes | bytes per sample | goal |")
    say("|---|---|---|---|")
    say(
        f"| hot rows (GPU step rows, encoded IB rows, float8 rows) | {hot:,} | {hot / samples:.2f} | ≤ 10 |"
    )
    say(f"| compacted history (chosen) | {compacted:,} | {compacted / samples:.2f} | ≤ 3 |")
    say(f"| Prometheus TSDB, same metrics ({prom_samples:,} samples, 2 h blocks) | {prom_size:,} "
        f"| {prom_size / prom_samples:.2f} | |")  # fmt: skip
    for name, size, written, seconds in alternatives:
        say(
            f"| tried: {name} | {size:,} | {size / samples:.2f} "
            f"| write {written:.2f} s, full scan {seconds:.2f} s |"
        )
    say()
    say("Where the hot rows' bytes go (per row and per sample of each table; after VACUUM):")
    say()
    say("| hot table: part | bytes per row | bytes per sample |")
    say("|---|---|---|")
    for line in hot_lines:
        say(line)
    say()
    say(f"Hot layouts tried on the same rows ({gpu_samples:,} GPU + {ib_samples:,} IB samples), "
        "heap + indexes, rows inserted step by step:")  # fmt: skip
    say()
    say("| hot layout | GPU B/sample | IB B/sample | both B/sample | goal |")
    say("|---|---|---|---|---|")
    for name, gpu_bytes, ib_bytes in hot_layouts:
        both = (gpu_bytes + ib_bytes) / (gpu_samples + ib_samples)
        say(
            f"| {name} | {gpu_bytes / gpu_samples:.2f} | {ib_bytes / ib_samples:.2f} | {both:.2f} | ≤ 10 |"
        )
    ratio = compacted / samples / (prom_size / prom_samples)
    say()
    say(f"compacted / Prometheus bytes per sample: {ratio:.2f}× (goal ≤ 2.5×)  "
        f"{'OK' if ratio <= 2.5 and compacted / samples <= 3 else 'ABOVE GOAL'}; "
        f"hot {'OK' if hot / samples <= 10 else 'ABOVE GOAL'}")  # fmt: skip


def _gpu_all() -> str:
    return "ingest_gpu_rows('-infinity', 'infinity')"


def _ib_all() -> str:
    return "ingest_ib_rows('-infinity', 'infinity')"


def measure_alternatives() -> list[tuple[str, int, float, float]]:
    """Layouts of the same hot rows, one row per device and hour: (name, bytes, write s, scan s)."""
    from bench import storage_hot
    from ingest.history import GPU_HISTORY, IB_HISTORY

    layouts = {
        "float8[] per metric, default storage (pglz)": ("float8", "pglz", False),
        "float4[] per metric, lz4": ("real", "lz4", True),
        "chosen encodings, pglz instead of lz4": (None, "pglz", True),
        "chosen encodings, lz4 (what compaction writes)": (None, "lz4", True),
    }
    measured = []
    for name, (element, method, main) in layouts.items():
        size, seconds, written = 0, 0.0, 0.0
        for table in (GPU_HISTORY, IB_HISTORY):
            alt = f"alt_{table.family}"
            _sql(f"DROP TABLE IF EXISTS {alt}")
            keys = ", ".join(table.group_key) + (", node_id" if table.family == "ib" else "")
            cols, aggs = [], []
            for e in table.encodings:
                kind = element or e.element
                expr = e.encode(e.column) if element is None else f"{e.column}::{kind}"
                cols.append(f"{e.column} {kind}[] COMPRESSION {method}")
                aggs.append(f"array_agg({expr} ORDER BY ts)")
            _sql(f"CREATE TABLE {alt} (hour timestamptz, {', '.join(k + ' int' for k in keys.split(', '))}, "
                 f"{', '.join(cols)}) WITH (toast_tuple_target = {128 if main else 2032})")  # fmt: skip
            if main:
                _sql(
                    f"ALTER TABLE {alt} "
                    + ", ".join(
                        f"ALTER COLUMN {e.column} SET STORAGE MAIN" for e in table.encodings
                    )
                )
            began = time.perf_counter()
            _sql(f"INSERT INTO {alt} SELECT date_bin('1 hour', ts, 'epoch'), {keys}, {', '.join(aggs)} "
                 f"FROM {storage_hot.source(table)} GROUP BY 1, {keys}")  # fmt: skip
            written += time.perf_counter() - began
            _sql(f"CREATE UNIQUE INDEX ON {alt} ({keys}, hour)")
            _sql(f"VACUUM ANALYZE {alt}")
            size += int(_sql(f"SELECT pg_total_relation_size('{alt}')")[0][0])
            began = time.perf_counter()
            _sql(f"SELECT count(*), {', '.join(f'sum(x.{e.column}::float8)' for e in table.encodings[:3])} "
                 f"FROM (SELECT {', '.join(f'unnest({e.column}) AS {e.column}' for e in table.encodings)} FROM {alt}) x")  # fmt: skip
            seconds += time.perf_counter() - began
            _sql(f"DROP TABLE {alt}")
        measured.append((name, size, written, seconds))
    return measured


# --- part 2: synthetic rows at scale, reads old vs new, compaction cost ----------------

GPU_VALUES = (
    "CASE WHEN d THEN 100 ELSE (k * 7 + n.id * 13 + g * 29) %% 101 END, "
    "CASE WHEN d THEN 0.002 ELSE ((k * 7919 + n.id * 104729 + g * 1299709) %% 1000000) / 1e6 END, "
    "CASE WHEN d THEN 0.02 ELSE ((k * 31 + n.id * 7 + g) %% 1000000) / 1e6 END, "
    "((k * 17 + n.id) %% 1000000) / 1e6, "
    "CASE WHEN d THEN 70.25 ELSE 300 + ((k * 31 + n.id * 11 + g) %% 400000) / 1000.0 END, "
    "40 + (k + n.id + g) %% 30, ((k + g) %% 50) * 1024000.0, (k %% 997 = 0)::int, 0, 0, 0"
)
IB_VALUES = (
    "25071541715.2 + k * 17.1 + p.id, 2.5e10 - k / 3.0, 6428600.4 + k, 6.4e6 + p.id, "
    "62678.86 + k %% 7, (k %% 701 = 0)::int, 0, 0, 0, 0, 0, 5e10, 4, 5, 0"
)


def write_synthetic(nodes: int, days: int) -> None:
    """Nodes, ports, ``days`` of 30 s GPU and IB rows from DAY0 (1/64 of nodes drift 03:00–05:00)."""
    from django.db import transaction

    from ingest import rollups
    from ingest.models import Family, IngestCursor
    from ingest.partitions import ensure_partitions
    from ingest.store import GPU_TABLE, IB_TABLE

    end = DAY0 + timedelta(days=days)
    _sql(
        "INSERT INTO ingest_node (name, pool, unschedulable, leaf_switch, gpu_model, first_seen, last_seen) "
        "SELECT 'gpu-' || lpad(i::text, 4, '0'), 'training', false, 'leaf-' || (i / 32), 'H100', %s, %s "
        "FROM generate_series(0, %s) i",
        [DAY0, end, nodes - 1],
    )
    _sql("INSERT INTO ingest_ibport (node_id, device, port, guid, leaf_switch, switch_port) "
         "SELECT n.id, 'mlx5_' || r, 1, '', n.leaf_switch, '' FROM ingest_node n, generate_series(0, 7) r")  # fmt: skip
    began = time.perf_counter()
    for hour in range(round(days * 24)):
        low = DAY0 + timedelta(hours=hour)
        steps = f"(SELECT generate_series({hour * 120}, {hour * 120 + 119}) AS k) t"
        with transaction.atomic():
            ensure_partitions(low, low + timedelta(hours=1))
            _sql(
                f"INSERT INTO ingest_gpusample ({', '.join(GPU_TABLE.columns)}) "
                f"SELECT %(day0)s + k * interval '30 seconds', n.id, g, {GPU_VALUES} FROM {steps}, "
                "ingest_node n, generate_series(0, 7) g, "
                "LATERAL (SELECT n.id %% 64 = 0 AND g = 0 AND (k / 120) %% 24 IN (3, 4) AS d) drift",
                {"day0": DAY0},
            )
            _sql(
                f"INSERT INTO ingest_ibsample ({', '.join(IB_TABLE.columns)}) "
                f"SELECT %(day0)s + k * interval '30 seconds', p.id, p.node_id, {IB_VALUES} "
                f"FROM {steps}, ingest_ibport p",
                {"day0": DAY0},
            )
            rollups.refresh("gpu", low, low + timedelta(seconds=3599))
            rollups.refresh("ib", low, low + timedelta(seconds=3599))
        print(
            f"  wrote hour {hour + 1}/{round(days * 24)} ({time.perf_counter() - began:.0f} s)",
            flush=True,
        )
    for family in Family.values:
        IngestCursor.objects.update_or_create(family=family, defaults={"covered_until": end})
    _sql("VACUUM ANALYZE")
    _sql("CHECKPOINT")


def _timed(read: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        read()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def reads(nodes: int, days: int, backtest_hours: float | None = None) -> dict[str, float]:
    """Each read path over the synthetic data, median of 3 runs (seconds); the backtest over
    the last ``backtest_hours`` (default: the whole span)."""
    from alerts.backtest import backtest
    from ingest import rollups, run_series, selectors

    end = DAY0 + timedelta(days=days)
    node = f"gpu-{nodes // 2:04d}"
    run_nodes = _sql("SELECT id, name FROM ingest_node ORDER BY id LIMIT 64")
    holdings = [(i, DAY0, end) for i, _name in run_nodes]
    mid = DAY0 + timedelta(hours=12)
    hours = days * 24 if backtest_hours is None else backtest_hours
    timeline_source = (
        "5-minute rollups" if end - DAY0 > run_series.RAW_SPAN else "raw samples"
    )  # as run_series reads that span

    def node_page(span: timedelta) -> Callable[[], object]:
        return lambda: (selectors.node_gpu_series(node, end - span, end, 300),
                        selectors.node_ib_series(node, end - span, end, 300))  # fmt: skip

    timings = {
        "node page 24 h (5-minute rollups)": _timed(node_page(timedelta(hours=24))),
        "node page 1 h at noon (raw samples)": _timed(
            lambda: (
                selectors.node_gpu_series(node, mid, mid + timedelta(hours=1), 30),
                selectors.node_ib_series(node, mid, mid + timedelta(hours=1), 30),
            )  # fmt: skip
        ),
        f"run timeline, {len(holdings)} nodes × {days * 24:g} h ({timeline_source})": _timed(
            lambda: (
                run_series.gpu_series(holdings, DAY0, end),
                run_series.ib_series(holdings, DAY0, end),
            )
        ),
        f"backtest gpu_tensor_drift over {hours:g} h": _timed(
            lambda: backtest(
                "gpu_tensor_drift", hours * 3600.0, {"require_run": False}, now=end.timestamp()
            ),
            runs=1,
        ),
        "5-minute rollups + tiles rebuild of 1 h": _timed(
            lambda: (
                rollups.refresh("gpu", mid, mid + timedelta(seconds=3599)),
                rollups.refresh("ib", mid, mid + timedelta(seconds=3599)),
            ),  # fmt: skip
        ),
        "rails, 1 h (raw samples)": _timed(
            lambda: selectors.rail_matrix("ib_tx", mid, mid + timedelta(hours=1))
        ),
    }
    if days >= 7:
        timings["node page 7 d (5-minute rollups)"] = _timed(node_page(timedelta(days=7)))
    import resource

    print(f"  peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB",
          flush=True)  # fmt: skip
    return timings


def backend_cpu_seconds() -> float:
    """CPU seconds (user + system) of this connection's Postgres backend, from /proc."""
    pid = int(_sql("SELECT pg_backend_pid()")[0][0])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def synthetic(
    part: int, nodes: int, days: int, backtest_hours: float | None = None, write: bool = True
) -> None:
    """Parts 2 and 3: reads on the hot layout, compaction cost, the same reads on compacted history
    (``write``: False reads rows an earlier run wrote, e.g. one stopped in its reads)."""
    from ingest import compaction

    began = time.perf_counter()
    if write:
        write_synthetic(nodes, days)
    rows = int(
        _sql(
            "SELECT (SELECT count(*) FROM ingest_gpusample) + (SELECT count(*) FROM ingest_ibsample)"
        )[0][0]
    )
    hot = relation_bytes(HOT)
    print(f"  {rows:,} rows written in {time.perf_counter() - began:.0f} s", flush=True)
    old = reads(nodes, days, backtest_hours)
    worker, backend = time.process_time(), backend_cpu_seconds()
    report = compaction.compact(
        now=DAY0 + timedelta(days=days, hours=7), budget_seconds=1e9,
        progress=lambda label, done, total: print(f"  compacted {label} ({done}/{total})", flush=True),
    )  # fmt: skip
    worker, backend = time.process_time() - worker, backend_cpu_seconds() - backend
    _sql("VACUUM ANALYZE")
    compacted = relation_bytes(HISTORY)
    new = reads(nodes, days, backtest_hours)
    per_day = (worker + backend) / days
    say()
    say(f"## Part {part}: {nodes} nodes × {days} day(s) of synthetic rows ({rows:,} rows)")
    say()
    say(f"compaction: {report.hours} hours, {report.rows:,} rows in {report.seconds:.1f} s wall; "
        f"CPU {worker:.1f} s worker + {backend:.1f} s Postgres = {per_day:.1f} s per day "
        f"= {per_day / 86400:.2%} of one core averaged over the day (goal ≤ 5 %)  "
        f"{'OK' if per_day / 86400 <= 0.05 else 'ABOVE GOAL'}")  # fmt: skip
    say(f"disk: hot {hot / 1e6:,.0f} MB → compacted {compacted / 1e6:,.0f} MB "
        f"(synthetic values: arithmetic patterns, not the simulator's)")  # fmt: skip
    say()
    say("| read (median of 3; backtest 1 run) | hot rows (today) | compacted history | new / old |")
    say("|---|---|---|---|")
    for name, seconds in old.items():
        say(
            f"| {name} | {seconds * 1000:,.0f} ms | {new[name] * 1000:,.0f} ms | {new[name] / seconds:.2f} |"
        )


def encode_hot(before: datetime) -> int:
    """Rewrite the float8 hot rows before ``before`` as encoded hot rows (GPU step rows,
    encoded IB rows), as ingest writes them; returns the rows rewritten."""
    from ingest.compaction import ENCODED

    moved = 0
    for encoded in ENCODED.values():
        hot, fits = encoded.family.hot, encoded.fits(30)
        _sql("DROP TABLE IF EXISTS bench_encode")
        _sql(f"CREATE TEMP TABLE bench_encode AS SELECT * FROM {hot} WHERE ts < %s AND {fits}", [before])  # fmt: skip
        _sql(encoded.insert("bench_encode", "true"))
        moved += int(_sql("SELECT count(*) FROM bench_encode")[0][0])
        _sql(f"DELETE FROM {hot} WHERE ts < %s AND {fits}", [before])
    return moved


def interleaved(nodes: int, hours: int, runs: int, first: str = "history") -> None:
    """Part 4: the same rows in two layouts in one database, each read run on both in turn.

    ``hours`` of ``nodes`` are written from DAY0 as float8 hot rows and copied one day later;
    the first copy is compacted (``first`` "history") or rewritten as encoded hot rows
    ("encoded": GPU step rows and encoded IB rows, what ingest writes now), the second stays
    float8 rows. Each read runs ``runs`` times on each copy, alternating, and prints the
    median wall time and the median CPU (this process plus its Postgres backend): a run
    that shares the machine slows both layouts alike.
    """
    from alerts.backtest import backtest
    from ingest import compaction, rollups, run_series, selectors
    from ingest.partitions import ensure_partitions
    from ingest.store import GPU_SAMPLE_TABLE, IB_TABLE

    write_synthetic(nodes, hours / 24)
    later = DAY0 + timedelta(days=1)
    ensure_partitions(later, later + timedelta(hours=hours))
    for table in (GPU_SAMPLE_TABLE, IB_TABLE):
        rest = ", ".join(table.columns[1:])  # ts first
        _sql(f"INSERT INTO {table.name} ({', '.join(table.columns)}) "  # noqa: S608
             f"SELECT ts + interval '1 day', {rest} FROM {table.name} WHERE ts < %s", [later])  # fmt: skip
    rollups.refresh("gpu", later, later + timedelta(hours=hours, seconds=-1))
    rollups.refresh("ib", later, later + timedelta(hours=hours, seconds=-1))
    if first == "history":
        report = compaction.compact(now=later + timedelta(hours=hours), budget_seconds=1e9)
        done = f"the first copy compacted: {report.hours} hours, {report.rows:,} rows"
    else:
        done = f"the first copy rewritten as encoded hot rows: {encode_hot(later):,} rows"
    _sql("VACUUM ANALYZE")
    node = f"gpu-{nodes // 2:04d}"
    run_nodes = [i for (i,) in _sql("SELECT id FROM ingest_node ORDER BY id LIMIT 64")]

    def paths(start: datetime) -> dict[str, Callable[[], object]]:
        mid, end = (
            start + timedelta(hours=max(0, min(2, hours - 1))),
            start + timedelta(hours=hours),
        )
        holdings = [(i, start, end) for i in run_nodes]
        return {
            "node page 1 h (raw samples)": lambda: (
                selectors.node_gpu_series(node, mid, mid + timedelta(hours=1), 30),
                selectors.node_ib_series(node, mid, mid + timedelta(hours=1), 30),
            ),
            "rails, 1 h": lambda: selectors.rail_matrix("ib_tx", mid, mid + timedelta(hours=1)),
            "5-minute rollups + tiles rebuild of 1 h": lambda: (
                rollups.refresh("gpu", mid, mid + timedelta(seconds=3599)),
                rollups.refresh("ib", mid, mid + timedelta(seconds=3599)),
            ),
            f"run timeline, {len(holdings)} nodes × {hours} h (raw samples)": lambda: (
                run_series.gpu_series(holdings, start, end),
                run_series.ib_series(holdings, start, end),
            ),
            f"backtest gpu_tensor_drift over {hours} h": lambda: backtest(
                "gpu_tensor_drift", hours * 3600.0, {"require_run": False}, now=end.timestamp()
            ),
        }

    def measured(read: Callable[[], object]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time() + backend_cpu_seconds()
        read()
        return time.perf_counter() - wall, time.process_time() + backend_cpu_seconds() - cpu

    history, hot = paths(DAY0), paths(later)
    times: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name in hot:
        times[name] = {"hot": [], "history": []}
        for _ in range(runs):
            times[name]["hot"].append(measured(hot[name]))
            times[name]["history"].append(measured(history[name]))
    say()
    say(f"## Part {4 if first == 'history' else 5}: {nodes} nodes × {hours} h, float8 hot rows "
        f"against {first}, reads alternated ({runs} runs each)")  # fmt: skip
    say()
    say(f"{done}; the second copy stays float8 hot rows")
    say()
    say(
        f"| read | hot wall | {first} wall | wall new / old | hot CPU | {first} CPU | CPU new / old |"
    )
    say("|---|---|---|---|---|---|---|")
    for name, pair in times.items():
        hw, hc = (statistics.median(x) for x in zip(*pair["hot"], strict=True))
        nw, nc = (statistics.median(x) for x in zip(*pair["history"], strict=True))
        say(f"| {name} | {hw * 1000:,.0f} ms | {nw * 1000:,.0f} ms | {nw / hw:.2f} "
            f"| {hc * 1000:,.0f} ms | {nc * 1000:,.0f} ms | {nc / hc:.2f} |")  # fmt: skip
    if first == "encoded":
        compaction_by_copy(nodes, hours, later)


def compaction_by_copy(nodes: int, hours: int, later: datetime) -> None:
    """Compact both copies of part 5 in one run; CPU (worker + backend) of each copy's hours."""
    from ingest import compaction

    began = time.process_time() + backend_cpu_seconds()
    spent = {"encoded": 0.0, "float8": 0.0}

    def progress(label: str, done: int, total: int) -> None:
        nonlocal began
        now = time.process_time() + backend_cpu_seconds()
        copy = "float8" if f" {later:%Y-%m-%d} " in label else "encoded"  # the later copy
        spent[copy] += now - began
        began = now

    report = compaction.compact(
        now=later + timedelta(hours=hours + 7), budget_seconds=1e9, progress=progress
    )
    per_day = {copy: cpu * 24 / hours for copy, cpu in spent.items()}
    say()
    say(f"compaction of both copies ({report.hours} hours, {report.rows:,} rows), CPU per copy: "
        f"encoded hot rows {spent['encoded']:.1f} s, float8 hot rows {spent['float8']:.1f} s "
        f"({spent['encoded'] / spent['float8']:.2f}x); a day of {nodes} nodes from encoded rows: "
        f"{per_day['encoded']:.0f} s = {per_day['encoded'] / 864:.2f} % of a core (goal ≤ 5 %)")  # fmt: skip


def _empty() -> None:
    """Remove every sample, node and port (between parts)."""
    from tests.support.timeseries import truncate_timeseries

    truncate_timeseries()
    _sql("TRUNCATE ingest_ibport, ingest_node, ingest_compaction CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real-nodes", type=int, default=64)
    parser.add_argument("--real-hours", type=float, default=6.0)
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--days", type=int, default=1, help="part 2: nodes × days (0: skip part 2)")
    parser.add_argument(
        "--week-nodes", type=int, default=32, help="part 3: nodes × 7 days (0: skip part 3)"
    )
    parser.add_argument(
        "--interleaved-nodes", type=int, default=512,
        help="part 4: nodes × --interleaved-hours in both layouts, reads alternated (0: skip)",
    )  # fmt: skip
    parser.add_argument(
        "--encoded-nodes", type=int, default=512,
        help="part 5: as part 4, float8 hot rows against encoded hot rows (0: skip)",
    )  # fmt: skip
    parser.add_argument("--interleaved-hours", type=int, default=6)
    parser.add_argument("--interleaved-runs", type=int, default=5)
    parser.add_argument("--skip-real", action="store_true", help="parts 2 and 3 only")
    parser.add_argument("--keep", action="store_true", help="keep the database (to inspect plans)")
    parser.add_argument(
        "--section", default="bench_storage", help="the RESULTS.md section to write (replaced)"
    )
    parser.add_argument(
        "--week-backtest-hours", type=float, default=None,
        help="part 3's backtest over the week's last H hours (default: all 168; a backtest holds "
        "its candidates' rows in memory: ~250 MB per hour at 512 nodes when every GPU is one)",
    )  # fmt: skip
    args = parser.parse_args()

    from bench._support import recreate_database, write_section

    recreate_database(BENCH_DB)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    say(f"# bench_storage ({datetime.now(UTC):%Y-%m-%d}, `{' '.join(sys.argv[1:]) or 'defaults'}`)")
    say()
    try:
        if not args.skip_real:
            real_pipeline(args)
            _empty()
        if args.days:
            synthetic(2, args.nodes, args.days)
            write_section(args.section, "\n".join(LINES))  # what is measured so far
            _empty()
        if args.week_nodes:
            synthetic(3, args.week_nodes, 7, args.week_backtest_hours)
            write_section(args.section, "\n".join(LINES))
            _empty()
        if args.interleaved_nodes:
            interleaved(args.interleaved_nodes, args.interleaved_hours, args.interleaved_runs)
            write_section(args.section, "\n".join(LINES))
            _empty()
        if args.encoded_nodes:
            interleaved(
                args.encoded_nodes, args.interleaved_hours, args.interleaved_runs, "encoded"
            )
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            recreate_database(BENCH_DB, drop_only=True)
    write_section(args.section, "\n".join(LINES))


if __name__ == "__main__":
    main()
