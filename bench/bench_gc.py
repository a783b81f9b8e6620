"""GC thresholds benchmark: ingest's GPU and IB reads of one cycle at CPython's default
collector thresholds beside WORKER_GC_THRESHOLDS (core.gc_tuning), same process, alternated.

    python bench/bench_gc.py [--nodes 512] [--rounds 4]

A Prometheus (remote-write receiver on) takes ten 30 s steps of the simulator's history into
its head; the cycle's reads (bench_reads' line 9: ``query_range`` with the sampling context
kept, folded as ingest folds them) run ``--rounds`` times at each setting, the order
alternating, after a full collection each time; this process' CPU is what ingest's costs.
Writes the ``bench_gc-<nodes>`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._support import write_section  # noqa: E402

DEFAULT = (700, 10, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("PROMETHEUS_URL", "http://127.0.0.1:9")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.conf import settings

    from bench.bench_ingest import HISTORY_FAMILIES
    from bench.bench_reads import folded, todays_queries
    from bench.bench_remote_write import by_step
    from bench.bench_scale import STEP
    from ingest.prometheus import PrometheusClient
    from simulator import Cluster, ClusterSpec, ExporterOptions, write_history
    from tests.support.remote_write import (
        post_bodies,
        receiver_prometheus,
        series_of,
        write_requests,
    )

    tuned = tuple(settings.WORKER_GC_THRESHOLDS)
    lines = []
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        end = float(int(time.time() // STEP) * STEP)
        spec = ClusterSpec(
            nodes=args.nodes, seed=1, epoch=datetime.fromtimestamp(end, UTC),
            exporters=ExporterOptions(node_ib_dual_port_hca=False),
        )  # fmt: skip
        write_history(
            Cluster(spec), end - 10 * STEP, end, float(STEP), workdir / "h.om", HISTORY_FAMILIES
        )
        steps = by_step(series_of(workdir / "h.om"))
        prometheus = receiver_prometheus(workdir / "p", timeout=120)
        try:
            for step in steps.values():
                post_bodies(prometheus.url, write_requests(step))
            client = PrometheusClient(prometheus.url, timeout=120)
            queries = todays_queries(client)
            until = datetime.fromtimestamp(max(steps) / 1000, UTC)
            window = (until - timedelta(seconds=STEP), until, float(STEP))
            del steps
            gc.collect()
            folded(client, queries, "query_range", window, kept=True)  # warm: connections, caches
            cpu: dict[tuple[int, ...], list[float]] = {DEFAULT: [], tuned: []}
            for round_ in range(args.rounds):
                for thresholds in (DEFAULT, tuned) if round_ % 2 == 0 else (tuned, DEFAULT):
                    gc.set_threshold(*thresholds)
                    gc.collect()
                    began = time.process_time()
                    folded(client, queries, "query_range", window, kept=True)
                    cpu[thresholds].append(time.process_time() - began)
        finally:
            prometheus.stop()
    reference = statistics.median(cpu[DEFAULT])
    lines.append(f"ingest's GPU and IB reads of one cycle at {args.nodes:,} nodes "
                 f"({len(queries)} queries), this process' CPU, medians of {args.rounds}:")  # fmt: skip
    for thresholds, label in ((DEFAULT, "CPython's default"), (tuned, "WORKER_GC_THRESHOLDS")):
        median = statistics.median(cpu[thresholds])
        runs = ", ".join(f"{value:.2f}" for value in cpu[thresholds])
        lines.append(f"  gc thresholds {thresholds!s:<18} ({label:<21}) {median:6.2f} s  "
                     f"{median / reference:.2f}x   (runs: {runs})")  # fmt: skip
    print("\n".join(lines))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_section(
        f"bench_gc-{args.nodes}",
        f"## bench_gc.py --nodes {args.nodes} ({stamp})\n\n```\n" + "\n".join(lines) + "\n```",
    )


if __name__ == "__main__":
    main()
