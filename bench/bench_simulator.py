"""Simulator benchmark: one 1,024-node scrape (all dialects) and 24 h of 64-node history.

Run: python bench/bench_simulator.py [--skip-promtool]. Needs no Django.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator import Cluster, ClusterSpec, render_all, with_scenario, write_history  # noqa: E402

SCRAPE_INTERVAL = 30.0
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def bench_scrape(nodes: int) -> tuple[float, int]:
    """Seconds to render every target of an N-node cluster once (after one warm-up scrape)."""
    cluster = Cluster(with_scenario(ClusterSpec(nodes=nodes, seed=1, epoch=EPOCH), "demo"))
    render_all(cluster, EPOCH.timestamp())
    began = time.perf_counter()
    size = render_all(cluster, EPOCH.timestamp() + SCRAPE_INTERVAL)
    return time.perf_counter() - began, size


def bench_history(workdir: Path, promtool: bool) -> tuple[float, float | None, int, int]:
    """(write seconds, promtool seconds, samples, bytes) for 24 h of 64 nodes at the default step."""
    cluster = Cluster(with_scenario(ClusterSpec(nodes=64, seed=1, epoch=EPOCH), "demo"))
    out = workdir / "history.om"
    stats = write_history(cluster, EPOCH - timedelta(hours=24), EPOCH, 60.0, out, "key")
    load = None
    if promtool and shutil.which("promtool"):
        began = time.perf_counter()
        cmd = [
            "promtool",
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(out),
            str(workdir / "tsdb"),
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        load = time.perf_counter() - began
    return stats.seconds, load, stats.samples, stats.bytes


def main() -> None:
    """Print both figures and their ratios to the budgets."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-promtool", action="store_true")
    parser.add_argument("--skip-history", action="store_true")
    args = parser.parse_args()
    seconds, size = bench_scrape(1024)
    print(
        f"scrape 1,024 nodes (all dialects): {seconds:.2f} s, {size / 1e6:.0f} MB; interval {SCRAPE_INTERVAL:.0f} s -> {seconds / SCRAPE_INTERVAL:.1%} of it; goal < 2 s ({seconds / 2:.2f}x of goal)"
    )
    if args.skip_history:
        return
    with tempfile.TemporaryDirectory() as tmp:
        write, load, samples, size = bench_history(Path(tmp), not args.skip_promtool)
    loaded = f"{load:.1f} s" if load is not None else "skipped"
    print(
        f"history 64 nodes x 24 h @60 s (key families): write {write:.1f} s ({samples:,} samples, {size / 1e9:.2f} GB), promtool load {loaded}"
    )


if __name__ == "__main__":
    main()
