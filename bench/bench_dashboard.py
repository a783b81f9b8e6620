"""Dashboard benchmarks, printed beside their references (``make bench``).

1. Heatmap JSON for 512 nodes × 24 h (GET /api/v1/heatmap, 5-minute columns) against the
   equivalent Prometheus ``query_range`` at the same resolution over the same samples
   (what a Grafana panel would run): ``avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)``, step 300 s.
   Goal: ≥ 10× faster.
2. Navigation → drawn 1,024-node heatmap (24 h) in headless Chromium against daphne. Goal ≤ 1.5 s.

It runs on a throwaway database (``test_cw_bench_<pid>``) and its own Prometheus, both removed
at the end; the same 5-minute GPU samples go to Postgres (as ingest's per-GPU and per-node rollups and
heatmap tiles) and Prometheus.
"""

from __future__ import annotations

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
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/cw_bench_{os.getpid()}")
os.environ.setdefault("REDIS_URL", f"redis://127.0.0.1:6379/{1 + os.getpid() % 15}")
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"  # Playwright's sync loop shares the thread

import django  # noqa: E402

django.setup()

from django.db import connection, transaction  # noqa: E402

STEP = 300
HOURS = 24
GPUS = 8
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def timed(fn: Callable[[], object], runs: int = 5) -> float:
    """Median wall time of ``runs`` calls, after one warm-up."""
    fn()
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def util(node: int, gpu: int, k: int) -> float:
    """A deterministic utilization pattern with one drifting node."""
    return 100.0 if node == 7 else float(60 + (node * 7 + gpu * 3 + k) % 40)


def tensor(node: int, gpu: int, k: int) -> float:
    return 0.02 if node == 7 else 0.3 + ((node + gpu + k) % 10) / 20


@transaction.atomic
def write_postgres(first: int, count: int, start: datetime) -> None:
    """Nodes ``gpu-<first>…`` and 24 h of 5-minute GPU rollups (what ingest keeps for long windows)."""
    from ingest import rollups
    from ingest.models import IngestCursor, Node
    from ingest.partitions import ROLLUP_TABLES, ensure_partitions
    from ingest.store import GPU_TABLE, CopyTable, copy_rows

    end = start + timedelta(hours=HOURS)
    nodes = Node.objects.bulk_create(
        Node(name=f"gpu-{i:04d}", pool="training", leaf_switch=f"leaf-{i // 32:02d}", last_seen=end)
        for i in range(first, first + count)
    )
    ensure_partitions(start, end, ROLLUP_TABLES)
    rollup = CopyTable("ingest_gpurollup", GPU_TABLE.columns, GPU_TABLE.types, GPU_TABLE.key)
    blank = [None] * 9
    rows = [
        (
            start + timedelta(seconds=STEP * k),
            node.pk,
            gpu,
            util(first + n, gpu, k),
            tensor(first + n, gpu, k),
            *blank,
        )
        for n, node in enumerate(nodes)
        for gpu in range(GPUS)
        for k in range(HOURS * 3600 // STEP)
    ]
    copy_rows(rollup, rows)
    # As ingest's commit does: the per-node rollups of the buckets just written, then their tiles.
    rollups.refresh_nodes("gpu", start, end)
    rollups.refresh_tiles("gpu", start, end)
    # As after an ingest cycle: the cursor keys the heatmap cache (see dashboard.api.cache).
    IngestCursor.objects.update_or_create(family="gpu", defaults={"covered_until": end})
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE ingest_gpurollup")
        cursor.execute("ANALYZE ingest_noderollup")
        cursor.execute("ANALYZE ingest_heatmaptile")


@transaction.atomic
def rewrite_recent(start: datetime) -> None:
    """Refresh the last 2 h again, as late samples make ingest do: rewritten rows move in the heap."""
    from ingest import rollups

    end = start + timedelta(hours=HOURS)
    for low in (end - timedelta(hours=2), start + timedelta(hours=6)):
        rollups.refresh_nodes("gpu", low, low + timedelta(hours=2))
        rollups.refresh_tiles("gpu", low, low + timedelta(hours=2))


def write_openmetrics(path: Path, count: int, start: datetime) -> None:
    """The same samples for Prometheus (promtool backfill)."""
    base = int(start.timestamp())
    with path.open("w") as out:
        out.write("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
        for n in range(count):
            for gpu in range(GPUS):
                labels = (
                    f'{{Hostname="gpu-{n:04d}",gpu="{gpu}",job="dcgm",instance="gpu-{n:04d}:9400"}}'
                )
                for k in range(HOURS * 3600 // STEP):
                    out.write(f"DCGM_FI_DEV_GPU_UTIL{labels} {util(n, gpu, k)} {base + STEP * k}\n")
        out.write("# EOF\n")


def bench_prometheus(count: int, start: datetime, workdir: Path) -> float:
    """Median time of the equivalent query_range (JSON fetched and parsed, as Grafana would)."""
    from tests.support.prometheus import PrometheusProcess, create_blocks

    om = workdir / "history.om"
    write_openmetrics(om, count, start)
    create_blocks(om, workdir / "tsdb")
    om.unlink()
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    prometheus = PrometheusProcess(config, workdir / "tsdb").start()
    try:
        end = start + timedelta(hours=HOURS)
        query = "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"
        first = prometheus.query_range(query, start.timestamp(), end.timestamp() - STEP, STEP)
        assert len(first) == count, f"Prometheus returned {len(first)} series"
        return timed(
            lambda: prometheus.query_range(query, start.timestamp(), end.timestamp() - STEP, STEP)
        )
    finally:
        prometheus.stop()


def bench_heatmap_json(start: datetime, user: object) -> tuple[float, float, int]:
    """GET /api/v1/heatmap (512 nodes × 288 columns) through Django: cold, cached (median), size."""
    from django.core.cache import cache
    from django.test import Client

    from dashboard.api.cache import heatmap_key

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    end = start + timedelta(hours=HOURS)
    url = f"/api/v1/heatmap?metric=gpu_util&start={start:%Y-%m-%dT%H:%M:%SZ}&end={end:%Y-%m-%dT%H:%M:%SZ}&step={STEP}"
    response = client.get(url)
    body = response.json()
    assert (
        response.status_code == 200 and len(body["nodes"]) == 512 and len(body["times"]) == 288
    ), body.get("detail")
    key = heatmap_key("gpu_util", "name", start, end, STEP)

    def cold() -> None:
        cache.delete(key)
        client.get(url)

    return timed(cold, runs=3), timed(lambda: client.get(url)), len(response.content)


def bench_browser(server_url: str, username: str, password: str) -> tuple[float, float]:
    """Navigation start → heatmap drawn (performance.now() after Plotly.react), first (cold) and median of 3."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        page = browser.new_context(
            viewport={"width": 1440, "height": 900}, base_url=server_url
        ).new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(server_url + "/")
        times = []
        for _ in range(4):
            page.goto("/fabric/?metric=gpu_util&window=24h")
            page.wait_for_function(
                "() => window.cwFabric && window.cwFabric.drawnAt !== null", timeout=30_000
            )
            rows = page.evaluate("() => document.getElementById('heatmap').data[0].z.length")
            assert rows == 1024, rows
            times.append(page.evaluate("() => window.cwFabric.drawnAt") / 1000)
        browser.close()
    return times[0], statistics.median(times[1:])


def main() -> None:
    """Set up, measure, print, clean up."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from tests.support.processes import run_asgi_server, subprocess_env

    creation = connection.creation
    old_name = connection.settings_dict["NAME"]
    creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    workdir = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    try:
        now = datetime.now(UTC)
        start = datetime.fromtimestamp(int(now.timestamp()) // STEP * STEP, UTC) - timedelta(
            hours=HOURS - 1
        )
        user = get_user_model().objects.create_user("bench", password="bench-password-123")
        write_postgres(0, 512, start)
        cold, warm, size = bench_heatmap_json(start, user)
        rewrite_recent(start)
        rewritten, _, _ = bench_heatmap_json(start, user)
        prom_time = bench_prometheus(512, start, workdir)
        print(f"heatmap JSON, 512 nodes × 24 h (288 × 5-min columns, {size / 1e6:.1f} MB):")
        print(
            f"  cold (first viewer after an ingest cycle): {cold * 1000:6.0f} ms  {prom_time / cold:5.1f}× Prometheus"
        )
        print(
            f"  cold, after rewriting 4 h of rollups:      {rewritten * 1000:6.0f} ms  {prom_time / rewritten:5.1f}× Prometheus"
        )
        print(
            f"  cached (same cycle, cursor-keyed):         {warm * 1000:6.0f} ms  {prom_time / warm:5.1f}× Prometheus"
        )
        print(
            f"Prometheus query_range, same samples, same step: {prom_time * 1000:.0f} ms (goal: ≥ 10× slower than us)"
        )
        write_postgres(512, 512, start)
        with override_static(workdir):
            call_command("collectstatic", interactive=False, verbosity=0)
            with run_asgi_server(subprocess_env(DEBUG="0"), log_dir=workdir) as server:
                first, drawn = bench_browser(server.url, "bench", "bench-password-123")
        print("navigation → drawn 1,024-node heatmap (24 h), headless Chromium (goal ≤ 1500 ms):")
        print(
            f"  first load (cold cache): {first * 1000:.0f} ms; later loads (median of 3): {drawn * 1000:.0f} ms"
        )
    finally:
        connection.close()
        creation.destroy_test_db(old_name, verbosity=0)


class override_static:  # noqa: N801 - used like override_settings
    """Collect static files into a temporary STATIC_ROOT (daphne serves them with DEBUG off)."""

    def __init__(self, workdir: Path) -> None:
        from django.test.utils import override_settings

        self.override = override_settings(STATIC_ROOT=workdir / "static")

    def __enter__(self) -> None:
        self.override.enable()

    def __exit__(self, *exc: object) -> None:
        self.override.disable()


if __name__ == "__main__":
    main()
