"""Alert evaluation benchmark: every rule over a 512-node cluster, beside one ingest cycle of it.

    python bench/bench_alerts.py [--nodes 512] [--minutes 20] [--runs 5]

A simulated cluster (8 GPUs and 8 IB ports per node, a few faults) is served by
a real Prometheus with ``--minutes`` of history; real ingest stores it; then one
ingest cycle (every family, one interval) and ``--runs`` evaluations of all
rules are timed. Goal: an evaluation ≤ 1 s and ≤ 5 % of the ingest cycle. Uses
its own database (clusterwatch_bench_alerts, created and dropped here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BENCH_DB = "clusterwatch_bench_alerts"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}"


def recreate_database(drop_only: bool = False) -> None:
    """Drop (and unless ``drop_only`` recreate) this benchmark's database."""
    from bench._support import recreate_database as recreate

    recreate(BENCH_DB, drop_only)


def faulty_cluster(nodes: int, end: float):  # noqa: ANN201 - a simulator Cluster
    """A cluster with a drifting GPU, a port with symbol errors and a congested node."""
    from simulator import Cluster, ClusterSpec, Fault, FaultKind

    epoch = datetime.fromtimestamp(end, UTC)
    names = [n.name for n in Cluster(ClusterSpec(nodes=nodes, seed=1, epoch=epoch)).nodes]
    w = lambda minutes: epoch + timedelta(minutes=minutes)  # noqa: E731
    faults = [
        Fault(FaultKind.TENSOR_DRIFT, w(-15), w(30), nodes=[names[0]], gpus=[3]),
        Fault(FaultKind.IB_SYMBOL_ERRORS, w(-15), w(30), nodes=[names[1]], ports=[2]),
        Fault(FaultKind.IB_CONGESTION, w(-15), w(30), nodes=[names[2]]),
        Fault(FaultKind.XID, w(-10), w(30), nodes=[names[3]], gpus=[0], params={"code": 79}),
    ]
    return Cluster(ClusterSpec(nodes=nodes, seed=1, epoch=epoch, faults=faults))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    recreate_database()
    import django

    django.setup()
    from django.core.management import call_command

    from tests.support.prometheus import simulated_prometheus

    call_command("migrate", verbosity=0)
    end = float(int(time.time() // 30) * 30)
    cluster = faulty_cluster(args.nodes, end)
    print(f"simulating {args.nodes} nodes, {args.minutes:g} min of history…", flush=True)
    try:
        with (
            tempfile.TemporaryDirectory() as workdir,
            simulated_prometheus(
                cluster, Path(workdir), timedelta(minutes=args.minutes), 30.0, "30s", "all", end
            ) as prom,
        ):
            run(prom, end, args)
    finally:
        from django.db import connections

        connections.close_all()
        recreate_database(drop_only=True)


def run(prom, end: float, args: argparse.Namespace) -> None:  # noqa: ANN001
    from django.conf import settings
    from django.db import connection

    from alerts.services import evaluate
    from ingest.prometheus import PrometheusClient
    from ingest.services import ingest_all

    client = PrometheusClient(prom.prometheus.url, timeout=120)
    interval = settings.INGEST_INTERVAL_SECONDS
    last = datetime.fromtimestamp(end - 30, UTC)
    began = time.perf_counter()
    ingest_all(
        since=datetime.fromtimestamp(prom.start, UTC),
        until=last - timedelta(seconds=interval),
        client=client,
    )
    print(f"  history ingested in {time.perf_counter() - began:.0f} s", flush=True)
    began = time.perf_counter()
    ingest_all(until=last, client=client)
    cycle = time.perf_counter() - began
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        cursor.execute(
            "SELECT (SELECT count(*) FROM ingest_gpuhot), (SELECT count(*) FROM ingest_ibhot)"
        )
        gpu_rows, ib_rows = cursor.fetchone()

    first = evaluate(trigger="bench")  # opens the faults' alerts: their starts are walked back
    results = [evaluate(trigger="bench") for _ in range(args.runs)]
    totals = [r.timings["total"] for r in results]
    typical = statistics.median(totals)
    phases = {
        k: statistics.median(r.timings[k] for r in results) for k in ("fetch", "compute", "write")
    }
    slowest = sorted(results[-1].timings["rules"].items(), key=lambda kv: -kv[1])[:3]
    gpus, ports = args.nodes * 8, args.nodes * 8
    print()
    print(
        f"stored: {gpu_rows:,} GPU rows, {ib_rows:,} IB rows; firing {results[-1].firing}, pending {results[-1].pending}"
    )
    print(f"one ingest cycle (every family, {interval} s)  : {cycle:8.3f} s")
    print(
        f"one evaluation of all rules ({args.nodes} nodes, {gpus:,} GPUs, {ports:,} ports): {typical:8.3f} s "
        f"(median of {args.runs} steady-state evaluations)"
    )
    print(
        f"first evaluation (opens {first.firing + first.pending} alerts, walks their starts back): "
        f"{first.timings['total']:8.3f} s (walk-back {first.timings['since']:.3f} s)"
    )
    print("  " + ", ".join(f"{k} {v:.3f} s" for k, v in phases.items()))
    queries = sorted(results[-1].timings["queries"].items(), key=lambda kv: -kv[1])[:5]
    print("  slowest queries: " + ", ".join(f"{k} {v:.3f} s" for k, v in queries))
    print("  slowest rules: " + ", ".join(f"{k} {v:.3f} s" for k, v in slowest))
    share = typical / cycle if cycle else float("nan")
    print(f"evaluation ≤ 1 s                       : {'OK' if typical <= 1.0 else 'ABOVE GOAL'}")
    print(
        f"evaluation / ingest cycle              : {share:8.1%}  (goal ≤ 5%)  {'OK' if share <= 0.05 else 'ABOVE GOAL'}"
    )


if __name__ == "__main__":
    main()
