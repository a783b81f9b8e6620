"""Scale benchmark: one ingest cycle of a 4,096-node cluster on 1 and 2 Celery worker processes.

    python bench/bench_scale.py [--nodes 4096] [--shards 8] [--minutes 4] [--workdir DIR]

A short simulator history (``--minutes`` at a 30 s step, every metric the GPU
and IB families read) is backfilled into a Prometheus of its own; ``--workdir``
keeps that TSDB for the next run (set-up is most of the wall time). A warm-up
ingest creates the nodes and ports; then the same steady-state cycle (one 30 s
step of every family) is timed: in-process unsharded, and sharded on 1 and on
2 real ``celery worker`` processes, each beside the 30 s scrape interval (goal
with 2 workers: < 50 %). Also: rows/s against a raw binary COPY of the same rows
into the same tables, each worker's peak RSS (goal ≤ 600 MB), index use and
partition maintenance at this size. Each mode also reports the CPU seconds it
cost the ingest processes (this one, or the workers) and the Prometheus server:
on a shared host their sum, not the wall time, is what a cycle really costs.
Own database (created and dropped here).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._support import child_env, peak_rss_mb, recreate_database, write_section  # noqa: E402
from bench.bench_ingest import HISTORY_FAMILIES  # noqa: E402

BENCH_DB = "clusterwatch_bench_scale"
STEP = 30
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.update(
    DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}",
    REDIS_URL=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15"),
    INGEST_STEP_SECONDS=str(STEP),
    INGEST_SETTLE_SECONDS="0",
    PROMETHEUS_TIMEOUT_SECONDS="120",
    LOG_LEVEL="WARNING",
)
LINES: list[str] = []


def say(line: str = "") -> None:
    """Print a result line and keep it for RESULTS.md."""
    print(line, flush=True)
    LINES.append(line)


def history_prometheus(nodes: int, minutes: int, workdir: Path):  # noqa: ANN201 - PrometheusProcess
    """(Prometheus holding ``minutes`` of history, history end); reuses workdir's TSDB if it matches."""
    from simulator import Cluster, ClusterSpec, ExporterOptions, write_history
    from tests.support.prometheus import PROMTOOL, PrometheusProcess

    meta_path, tsdb = workdir / "meta.json", workdir / "tsdb"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if meta.get("nodes") != nodes or meta.get("minutes") != minutes or not tsdb.exists():
        shutil.rmtree(tsdb, ignore_errors=True)
        end = float(int(time.time() // STEP) * STEP)
        # 8 IB ports per node, as in bench/RESULTS.md (no storage HCA: the figures stay comparable).
        exporters = ExporterOptions(node_ib_dual_port_hca=False)
        epoch = datetime.fromtimestamp(end, UTC)
        cluster = Cluster(ClusterSpec(nodes=nodes, seed=1, epoch=epoch, exporters=exporters))
        began = time.perf_counter()
        stats = write_history(
            cluster, end - minutes * 60, end, float(STEP), workdir / "h.om", HISTORY_FAMILIES
        )
        say(f"set-up: history {stats.samples:,} samples in {time.perf_counter() - began:.0f} s")
        began = time.perf_counter()
        cmd = [
            PROMTOOL,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(workdir / "h.om"),
            str(tsdb),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        (workdir / "h.om").unlink()
        say(f"set-up: promtool create-blocks {time.perf_counter() - began:.0f} s")
        meta_path.write_text(json.dumps({"nodes": nodes, "minutes": minutes, "end": end}))
    else:
        end = meta["end"]
        say("set-up: history TSDB reused from --workdir")
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    began = time.perf_counter()
    prometheus = PrometheusProcess(config, tsdb).start(timeout=300)
    say(f"set-up: Prometheus ready in {time.perf_counter() - began:.0f} s")
    return prometheus, end


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (its own threads, not children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def reset_to(moment: datetime) -> None:
    """Forget everything after ``moment``: rows, XID events, cursors (shard cursors restart)."""
    from django.db import connection

    from ingest.models import IngestCursor, ShardCursor

    with connection.cursor() as cursor:
        for table in (
            "ingest_gpusample", "ingest_gpustep", "ingest_ibsample", "ingest_ibencoded",
            "ingest_xidevent",
        ):  # fmt: skip
            cursor.execute(f"DELETE FROM {table} WHERE ts > %s", [moment])
    IngestCursor.objects.update(covered_until=moment)
    ShardCursor.objects.all().delete()


def window_rows(after: datetime) -> int:
    """GPU + IB rows stored after ``after``."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM ingest_gpuhot WHERE ts > %s)"
            " + (SELECT count(*) FROM ingest_ibhot WHERE ts > %s)",
            [after, after],
        )
        return int(cursor.fetchone()[0])


def all_covered(until: datetime) -> bool:
    """Every family's cursor has reached ``until``."""
    from ingest.models import Family, IngestCursor

    reached = IngestCursor.objects.filter(covered_until__gte=until).count()
    return reached == len(Family.values)


@contextlib.contextmanager
def workers(count: int, shards: int, log_dir: Path) -> Iterator[list]:
    """``count`` real celery workers (solo pool) consuming the ingest queue."""
    from tests.support.processes import run_celery_worker

    env = child_env(INGEST_SHARDS=str(shards))
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(run_celery_worker(env, ["celery", "ingest"], log_dir, 120))
            for _ in range(count)
        ]


def timed_cycle_on_workers(
    count: int, shards: int, until: datetime, log_dir: Path, prometheus_pid: int
) -> tuple[float, list[float], tuple[float, float]]:
    """(wall seconds from sending the cycle task to every cursor at ``until``, peak RSS per
    worker, CPU seconds of (the workers, Prometheus) over the cycle)."""
    from ingest.tasks import ingest_cycle

    with workers(count, shards, log_dir) as running:
        pids = [w.process.pid for w in running]
        cpu_before = [cpu_seconds(pid) for pid in [*pids, prometheus_pid]]
        began, sent = time.perf_counter(), datetime.now(UTC)
        ingest_cycle.apply_async(kwargs={"until": until.isoformat()})
        while not all_covered(until):
            if time.perf_counter() - began > 600:
                raise RuntimeError("the cycle did not finish within 10 minutes")
            time.sleep(0.02)
        wall = time.perf_counter() - began
        used = [
            cpu_seconds(pid) - b for pid, b in zip([*pids, prometheus_pid], cpu_before, strict=True)
        ]
        timeline(sent, until)
        return wall, [peak_rss_mb(pid) for pid in pids], (sum(used[:-1]), used[-1])


def timeline(sent: datetime, until: datetime) -> None:
    """Per family: tasks run, busy seconds summed, first start and last finish after sending."""
    from django.db.models import Count, Max, Min

    from ingest.models import IngestCycle

    rows = (
        IngestCycle.objects.filter(window_end=until, started_at__gte=sent)
        .values("family")
        .annotate(n=Count("id"), first=Min("started_at"), last=Max("finished_at"))
    )
    time.sleep(0.5)  # the last shard records its cycle row just after its commit
    for row in rows:
        busy = sum(
            ((c.finished_at or datetime.now(UTC)) - c.started_at).total_seconds()
            for c in IngestCycle.objects.filter(
                family=row["family"], window_end=until, started_at__gte=sent
            )
        )
        say(f"    {row['family']:<12} {row['n']:2d} task(s), busy {busy:5.1f} s, "
            f"from +{(row['first'] - sent).total_seconds():.1f} s to +{(row['last'] - sent).total_seconds():.1f} s")  # fmt: skip


def raw_copy_seconds(after: datetime) -> float:
    """Read the window's GPU and IB rows, delete them, time a plain binary COPY of them back."""
    from django.db import connection, transaction

    from ingest.store import GPU_TABLE, IB_TABLE, copy_rows

    tables = {}
    with connection.cursor() as cursor:
        for table in (GPU_TABLE, IB_TABLE):
            cursor.execute(
                f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE ts > %s", [after]
            )
            tables[table] = cursor.fetchall()
            cursor.execute(f"DELETE FROM {table.name} WHERE ts > %s", [after])
    began = time.perf_counter()
    with transaction.atomic():
        for table, rows in tables.items():
            copy_rows(table, rows)
    return time.perf_counter() - began


def verify_indexes_and_partitions(until: datetime) -> None:
    """EXPLAIN the reads the dashboard makes at this size; time partition maintenance."""
    from django.db import connection, transaction

    from ingest import partitions

    checks = {
        "one node's GPUs, 24 h": (
            "SELECT ts, gpu, util FROM ingest_gpuhot WHERE node_id = "
            "(SELECT min(id) FROM ingest_node) AND ts > %s - interval '24 hours' ORDER BY ts"
        ),
        "one port, 24 h": (
            "SELECT ts, tx_bytes FROM ingest_ibhot WHERE port_id = "
            "(SELECT min(id) FROM ingest_ibport) AND ts > %s - interval '24 hours' ORDER BY ts"
        ),
        "fleet, last step": "SELECT node_id, avg(util) FROM ingest_gpuhot WHERE ts = %s GROUP BY node_id",
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE ingest_gpusample, ingest_gpustep, ingest_ibsample, ingest_ibencoded"
        )
        for name, sql in checks.items():
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", [until])
            plan = cursor.fetchone()[0][0]
            text = json.dumps(plan["Plan"])
            index = "index" if "Index" in text else "NO INDEX (seq scan)"
            say(f"  {name:<22}: {plan['Execution Time']:7.1f} ms  {index}")
    began = time.perf_counter()
    with transaction.atomic():
        partitions.ensure_partitions(until, until + timedelta(days=7))
        dropped = partitions.drop_expired()
    say(f"  partition maintenance : {1000 * (time.perf_counter() - began):7.1f} ms "
        f"(7 days ahead ensured, {len(dropped)} expired dropped)")  # fmt: skip


def measure(args: argparse.Namespace, end: float, log_dir: Path, prometheus_pid: int) -> None:
    """Warm-up, then the same one-step cycle in-process, on 1 and on 2 workers."""
    from ingest import services

    start = datetime.fromtimestamp(end - args.minutes * 60, UTC)
    until_warm = datetime.fromtimestamp(end - 90, UTC)
    until = datetime.fromtimestamp(end - 60, UTC)
    began = time.perf_counter()
    outcomes = services.ingest_all(since=start, until=until_warm)
    say(f"warm-up cycle ({(until_warm - start).seconds // STEP} steps, creates nodes and ports): "
        f"{time.perf_counter() - began:.1f} s, {sum(o.rows for o in outcomes):,} rows, "
        f"statuses {sorted({o.status for o in outcomes})}")  # fmt: skip
    reset_to(until_warm)
    began, cpu, prometheus_cpu = (
        time.perf_counter(),
        time.process_time(),
        cpu_seconds(prometheus_pid),
    )
    outcomes = services.ingest_all(until=until)
    baseline = time.perf_counter() - began
    cpu, prometheus_cpu = time.process_time() - cpu, cpu_seconds(prometheus_pid) - prometheus_cpu
    say(
        "in-process cycle per family: "
        + ", ".join(f"{o.family} {o.duration:.2f}s" for o in outcomes)
    )
    rows = window_rows(until_warm)
    results = {"in-process, unsharded (ingest_all)": (baseline, [], (cpu, prometheus_cpu))}
    for count in args.workers:
        reset_to(until_warm)
        results[f"{count} worker process{'es' if count > 1 else ''}, {args.shards} shards"] = (
            timed_cycle_on_workers(count, args.shards, until, log_dir, prometheus_pid)
        )
    assert window_rows(until_warm) == rows, "the sharded cycles stored a different row count"
    copy = raw_copy_seconds(until_warm)
    say()
    say(f"one steady-state cycle = one {STEP} s step of every family; {rows:,} GPU + IB rows "
        f"({args.nodes:,} nodes, {8 * args.nodes:,} GPUs, {8 * args.nodes:,} IB ports)")  # fmt: skip
    say(f"{'mode':<40} {'wall':>7} {'% of 30 s':>10} {'rows/s':>10} {'vs COPY':>8} "
        f"{'peak RSS/worker':>16} {'CPU s ingest+Prometheus':>24}")  # fmt: skip
    for mode, (wall, rss, (ingest_cpu, server_cpu)) in results.items():
        memory = ", ".join(f"{m:.0f} MB" for m in rss) or "-"
        say(f"{mode:<40} {wall:6.2f}s {100 * wall / STEP:9.1f}% {rows / wall:10,.0f} "
            f"{(rows / wall) / (rows / copy):7.2f}x {memory:>16} "
            f"{f'{ingest_cpu:.1f} + {server_cpu:.1f}':>24}")  # fmt: skip
    say(
        f"{'raw binary COPY of the same rows':<40} {copy:6.2f}s {'':>10} {rows / copy:10,.0f} {1:7.2f}x"
    )
    two = next(wall for mode, (wall, _, _) in results.items() if mode.startswith("2 "))
    peak = max(m for _, (_, rss, _) in results.items() for m in rss)
    say(f"goal: 2 workers < 50% of {STEP} s -> {100 * two / STEP:.1f}% "
        f"{'OK' if two < STEP / 2 else 'ABOVE GOAL'}; worker peak RSS <= 600 MB -> {peak:.0f} MB "
        f"{'OK' if peak <= 600 else 'ABOVE GOAL'}")  # fmt: skip
    say()
    say(f"indexes and partitions at {args.nodes:,} nodes:")
    verify_indexes_and_partitions(until)


def main() -> None:
    """Set up, measure, write the bench_scale section of bench/RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--minutes", type=int, default=4)
    parser.add_argument(
        "--workers",
        type=lambda v: [int(n) for n in v.split(",")],
        default=[1, 2, 4],
        help="worker process counts to time (comma-separated)",
    )
    parser.add_argument("--workdir", type=Path, default=None, help="keep the history TSDB here")
    args = parser.parse_args()
    total = time.perf_counter()
    recreate_database(BENCH_DB)
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        prometheus, end = history_prometheus(args.nodes, args.minutes, workdir)
        stack.callback(prometheus.stop)
        say(f"set-up total: {time.perf_counter() - began:.0f} s")
        os.environ["PROMETHEUS_URL"] = prometheus.url  # this process and its workers
        import django

        django.setup()
        from core.gc_tuning import tune_gc

        tune_gc()  # this process does a worker's ingest: its GC thresholds too
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        try:
            measure(args, end, workdir, prometheus.process.pid)
        finally:
            connections.close_all()
            recreate_database(BENCH_DB, drop_only=True)
    say(f"bench wall time: {time.perf_counter() - total:.0f} s")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_section(f"bench_scale-{args.nodes}", f"## bench_scale.py --nodes {args.nodes} ({stamp})\n\n"
                  "```\n" + "\n".join(LINES) + "\n```")  # fmt: skip


if __name__ == "__main__":
    main()
