"""Ingest benchmark: 256-node simulated cluster, 6 h backfill of the GPU and IB families.

    python bench/bench_ingest.py [--nodes 256] [--hours 6]

Prints, in one run: the ingest rate (samples/s, a sample = one stored non-NULL
value), (a) the rate of only fetching + decoding the same query_range answers,
(b) the rate of a raw binary COPY of the same rows into the same tables, the
ratio of ingest to min(a, b) (goal ≥ 0.6) and bytes per stored sample
including indexes (goal ≤ 16 B). Uses its own database (clusterwatch_bench,
created and dropped here) and its own Prometheus loaded with simulator history.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = "clusterwatch_bench"
#: Where ingest writes GPU and IB samples (float8 rows, GPU step rows, encoded IB rows).
HOT_TABLES = ("ingest_gpusample", "ingest_gpustep", "ingest_ibsample", "ingest_ibencoded")
#: Every metric the GPU and IB families read, so rows are as full as on a real cluster.
HISTORY_FAMILIES = ",".join(
    [
        "key",
        "DCGM_FI_PROF_SM_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "node_infiniband_port_packets_transmitted_total",
        "node_infiniband_port_packets_received_total",
        "node_infiniband_link_error_recovery_total",
        "node_infiniband_port_errors_received_total",
        "node_infiniband_local_link_integrity_errors_total",
        "node_infiniband_excessive_buffer_overrun_errors_total",
        "node_infiniband_physical_state_id",
        "node_infiniband_rate_bytes_per_second",
    ]
)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"


def recreate_database(drop_only: bool = False) -> None:
    """Drop (and unless ``drop_only`` recreate) this benchmark's database."""
    from bench._support import recreate_database as recreate

    recreate(BENCH_DB, drop_only)


def stored_samples() -> tuple[int, int]:
    """(non-NULL values, rows) in the GPU and IB sample tables."""
    from django.db import connection

    from ingest.store import GPU_VALUE_COLUMNS, IB_VALUE_COLUMNS

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT sum(num_nonnulls({', '.join(GPU_VALUE_COLUMNS)})), count(*) FROM ingest_gpuhot"
        )
        gpu_values, gpu_rows = cursor.fetchone()
        ib_values = [c for c in IB_VALUE_COLUMNS if c != "saturated"]
        cursor.execute(
            f"SELECT sum(num_nonnulls({', '.join(ib_values)})), count(*) FROM ingest_ibhot"
        )
        ib_values_n, ib_rows = cursor.fetchone()
    return int(gpu_values or 0) + int(ib_values_n or 0), int(gpu_rows) + int(ib_rows)


def stored_bytes() -> int:
    """Heap + TOAST + every index of every raw sample partition (after VACUUM)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {', '.join(HOT_TABLES)}")
        cursor.execute(
            "SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) FROM pg_inherits i "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ANY(%s)",
            [list(HOT_TABLES)],
        )
        return int(cursor.fetchone()[0])


def fetch_only(client, start: datetime, end: datetime) -> int:  # noqa: ANN001
    """Run the same range queries as ingest (same chunks and starts), decode and fold them as
    ingest does, count the points."""
    from functools import partial

    from django.conf import settings

    from ingest.identity import resolver_for
    from ingest.normalize import Collected
    from ingest.queries import DCGM_MARKERS, GPU, promql
    from ingest.services import split
    from ingest.sources.dcgm import FETCHED, gpu_key, node_by
    from ingest.sources.infiniband import IbSource, dialects_present

    gpu_dialect = client.detect_dialect(DCGM_MARKERS)
    points = 0
    for window in split(start, end, settings.INGEST_STEP_SECONDS, settings.INGEST_CHUNK_STEPS):
        names = resolver_for(client, window.start, window.end)  # node identity, as ingest does
        fetched = [c for c in FETCHED if c.name in GPU[gpu_dialect]]
        queries = [
            (promql("gpu", gpu_dialect, c.name, by=node_by()), window.fetch_start(c.kind))
            for c in fetched
        ]
        collected = Collected()
        answers = client.query_ranges(queries, window.end, window.step)
        collected.add_answers([c.name for c in fetched], answers, partial(gpu_key, names=names))
        folded_ib = [  # the IB family's own fetch + fold, per dialect present
            IbSource()._pull_dialect(client, dialect, window, names).collected
            for dialect in dialects_present(client)
        ]
        for pulled in (collected, *folded_ib):
            points += sum(len(at) for folded in pulled.columns.values() for at in folded.values())
        xid = promql("gpu", gpu_dialect, "xid", by=node_by())
        answer = client.query_range(xid, window.start, window.end, window.step)
        points += sum(len(s.points) for s in answer.series)
    return points


def raw_copy() -> float:
    """Read the stored rows back, empty the tables, time a plain binary COPY of them back in."""
    from django.db import connection, transaction

    from ingest.store import copy_rows

    tables = hot_rows()  # the same rows, COPYed as float8 rows
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(HOT_TABLES)}")
    began = time.perf_counter()
    with transaction.atomic():
        for table, rows in tables.items():
            copy_rows(table, rows)
    return time.perf_counter() - began


def hot_rows() -> dict:
    """Every stored GPU and IB sample as a float8 row, by ``CopyTable`` (from the hot views)."""
    from django.db import connection

    from ingest.store import GPU_SAMPLE_TABLE, IB_TABLE

    rows = {}
    for table, view in ((GPU_SAMPLE_TABLE, "ingest_gpuhot"), (IB_TABLE, "ingest_ibhot")):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {', '.join(table.columns)} FROM {view} ORDER BY ts")
            rows[table] = cursor.fetchall()
    return rows


def store_layouts(runs: int = 3) -> tuple[float, float]:
    """(encoded, float8) median seconds of writing the stored GPU and IB rows again through
    ``insert_rows``: as step rows and encoded IB rows, and as float8 rows
    (``INGEST_ENCODED_HOT_ROWS`` off), alternated, the tables emptied before each write."""
    import statistics

    from django.db import connection, transaction
    from django.test.utils import override_settings

    from ingest.store import insert_rows

    rows = hot_rows()
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(runs):
        for encoded in (True, False):
            with connection.cursor() as cursor:
                cursor.execute(f"TRUNCATE {', '.join(HOT_TABLES)}")
            began = time.perf_counter()
            with override_settings(INGEST_ENCODED_HOT_ROWS=encoded), transaction.atomic():
                for table, table_rows in rows.items():
                    insert_rows(table, table_rows)
            times[encoded].append(time.perf_counter() - began)
    return statistics.median(times[True]), statistics.median(times[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--hours", type=float, default=6.0)
    args = parser.parse_args()

    recreate_database()
    import django

    django.setup()
    from core.gc_tuning import tune_gc

    tune_gc()  # this process does a worker's ingest: its GC thresholds too
    from django.core.management import call_command

    from simulator import Cluster, ClusterSpec

    call_command("migrate", verbosity=0)
    end = float(int(time.time() // 30) * 30)
    cluster = Cluster(ClusterSpec(nodes=args.nodes, seed=1, epoch=datetime.fromtimestamp(end, UTC)))
    history = timedelta(hours=args.hours)
    try:
        with tempfile.TemporaryDirectory() as workdir:
            prometheus = history_prometheus(cluster, Path(workdir), end, history)
            try:
                run(prometheus.url, end, history)
            finally:
                prometheus.stop()
    finally:
        from django.db import connections

        connections.close_all()
        recreate_database(drop_only=True)


def history_prometheus(cluster, workdir: Path, end: float, history: timedelta):  # noqa: ANN001, ANN201
    """A Prometheus (no scraping) holding ``history`` of simulator samples before ``end``."""
    import subprocess

    from simulator import write_history
    from tests.support.prometheus import PROMTOOL, PrometheusProcess

    began = time.perf_counter()
    stats = write_history(
        cluster, end - history.total_seconds(), end, 30.0, workdir / "h.om", HISTORY_FAMILIES
    )
    print(
        f"  history: {stats.samples:,} samples written in {time.perf_counter() - began:.0f} s",
        flush=True,
    )
    began = time.perf_counter()
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(workdir / "h.om"),
                    str(workdir / "tsdb")], check=True, capture_output=True)  # fmt: skip
    (workdir / "h.om").unlink()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    prometheus = PrometheusProcess(config, workdir / "tsdb").start(timeout=120)
    print(f"  promtool + Prometheus start: {time.perf_counter() - began:.0f} s", flush=True)
    return prometheus


def run(url: str, end: float, history: timedelta) -> None:
    from ingest.prometheus import PrometheusClient
    from ingest.services import ingest_all

    client = PrometheusClient(url, timeout=120)
    start_at = datetime.fromtimestamp(end, UTC) - history
    until = datetime.fromtimestamp(end - 30, UTC)

    began = time.perf_counter()
    outcomes = ingest_all(since=start_at, until=until, client=client, families=["gpu", "ib"])
    ingest_seconds = time.perf_counter() - began
    for outcome in outcomes:
        print(
            f"  {outcome.family}: {outcome.status} rows={outcome.rows} skipped={outcome.skipped} {outcome.notes}"
        )
    samples, rows = stored_samples()
    size = stored_bytes()

    began = time.perf_counter()
    points = fetch_only(PrometheusClient(url, timeout=120), start_at, until)
    fetch_seconds = time.perf_counter() - began
    encoded_seconds, float8_seconds = store_layouts()
    copy_seconds = raw_copy()

    ingest_rate, fetch_rate, copy_rate = (
        samples / ingest_seconds,
        points / fetch_seconds,
        samples / copy_seconds,
    )
    ratio = ingest_rate / min(fetch_rate, copy_rate)
    print()
    print(f"stored: {rows:,} rows, {samples:,} samples (non-NULL values)")
    print(
        f"ingest (fetch+normalise+store) : {ingest_rate:12,.0f} samples/s  ({ingest_seconds:.1f} s)"
    )
    print(
        f"(a) fetch+decode only          : {fetch_rate:12,.0f} samples/s  ({points:,} points, {fetch_seconds:.1f} s)"
    )
    print(f"(b) raw binary COPY            : {copy_rate:12,.0f} samples/s  ({copy_seconds:.1f} s)")
    print(
        f"ratio ingest / min(a, b)       : {ratio:12.2f}   (goal >= 0.6)  {'OK' if ratio >= 0.6 else 'BELOW GOAL'}"
    )
    print(
        f"store the same rows again        : encoded {encoded_seconds:.2f} s, float8 rows "
        f"{float8_seconds:.2f} s ({encoded_seconds / float8_seconds:.2f}x; median of 3, alternated)"
    )
    per_sample = size / samples if samples else float("nan")
    print(
        f"bytes per stored sample        : {per_sample:12.1f} B (goal <= 16, incl. indexes; "
        f"{size / max(rows, 1):.0f} B/row)  {'OK' if per_sample <= 16 else 'ABOVE GOAL'}"
    )


if __name__ == "__main__":
    main()
