"""Load benchmark: 50 users browsing and 200 live websockets against the real web server.

    python bench/bench_load.py [--nodes 512] [--users 50] [--seconds 30] [--sockets 200]

Data: ``--nodes`` nodes with 8 GPUs and 8 IB ports each, 24 h of GPU and IB
samples written with SQL (every 5 min for 22 h, every 30 s for the last 2 h,
like an ingest would leave them) and the 5-minute rollups refreshed by
``ingest.rollups``. The load runs from this process (threads, keep-alive
HTTP/1.1, logged-in session) against the web server as deployed
(``python -m config.serve``: uvicorn, ``--workers`` processes, DEBUG off, collected
static files). Each user loops overview page → overview JSON → fabric
page → 24 h IB heatmap JSON → 24 h GPU heatmap JSON → a random node page →
its JSON, with ``--think`` seconds between requests. Each user starts its round at a
random one of those seven requests (within the first ``--think`` seconds), so the users
are independent: each kind of request arrives spread over the round. The load runs six
times on fresh servers with an empty cache, alternating three configurations, each pooled
over its two runs: node pages read from the rollups (``DASHBOARD_NODE_TILES=0``, the
reference) and from the hourly node tiles, both through ``config.handler.OneHopASGIHandler``,
and the node tiles through Django's own ``ASGIHandler`` (``bench/stock_asgi.py``, the
reference for the handler). Before it, the node page alone (in process, one request at a
time) both ways. A seventh run, not judged, has every user start its round at the
overview (the model before 2026-12-01 22:00 UTC): the 50 users then stay in step, every
user asks for a node page within the same second of each ~8 s round, and the table shows
what such a burst costs.
Reported: p50/p95/max per request kind and overall, errors (goal: every kind's
p95 ≤ 300 ms, the node page's p50 ≤ 150 ms, 0 errors), then every
websocket client's delay from an ingest commit (cursor advanced, event
published on commit, as ingest does) to receipt (goal: all within 2 s), and
each web worker process's peak RSS (goal ≤ 300 MB). Own database, created and dropped here.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._support import (  # noqa: E402
    child_env,
    peak_rss_mb,
    recreate_database,
    web_processes,
    write_section,
)

BENCH_DB = "clusterwatch_bench_load"
SECRET = "bench-load-secret-key-not-for-production-0123456789-abcdefghijklmnop"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.update(
    DEBUG="0",
    SECRET_KEY=os.environ.get("SECRET_KEY", SECRET),
    DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}",
    REDIS_URL=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/15"),
    ALLOWED_HOSTS="127.0.0.1,localhost",
    LOG_LEVEL="WARNING",
)
LINES: list[str] = []
#: Values that fit the hot layout (``ingest.gpu_steps``, ``ingest.ib_encoded``): util and
#: temperature whole numbers, as DCGM declares them (docs/scaling.md, the precision table).
GPU_VALUES = (
    "round(50 + 45 * random()), random(), random(), random(), 300 + 400 * random(), "
    "round(40 + 30 * random()), "
    "1e10 * random(), 0, 0, 0, 0"
)
IB_VALUES = (
    "4e10 * random(), 4e10 * random(), 1e6 * random(), 1e6 * random(), 1e5 * random(), "
    "0, 0, 0, 0, 0, 0, 5e10, 4, 5, 0"
)


def say(line: str = "") -> None:
    """Print a result line and keep it for RESULTS.md."""
    print(line, flush=True)
    LINES.append(line)


def write_data(nodes: int, end: datetime) -> None:
    """Nodes, ports, 24 h of raw GPU / IB rows and their rollups; every cursor at ``end``."""
    from django.db import connection, transaction

    from ingest import rollups
    from ingest.models import Family, IngestCursor
    from ingest.partitions import ensure_partitions
    from ingest.store import GPU_TABLE, IB_TABLE, insert_staged, open_stage

    start = end - timedelta(hours=24)
    recent = end - timedelta(hours=2)
    times = (
        "(SELECT generate_series(%(start)s::timestamptz, %(recent)s, '300 seconds') AS ts "
        "UNION SELECT generate_series(%(recent)s::timestamptz + interval '30 seconds', %(end)s, '30 seconds'))"
    )
    params = {"start": start, "recent": recent, "end": end, "nodes": nodes - 1}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ingest_node (name, pool, unschedulable, leaf_switch, gpu_model, first_seen, last_seen) "
            "SELECT 'gpu-' || lpad(i::text, 4, '0'), CASE WHEN i %% 4 = 3 THEN 'inference' ELSE 'training' END, "
            "false, 'ib-leaf-' || lpad((i / 32)::text, 2, '0'), 'NVIDIA H100 80GB HBM3', %(start)s, %(end)s "
            "FROM generate_series(0, %(nodes)s) i",
            params,
        )
        cursor.execute(
            "INSERT INTO ingest_ibport (node_id, device, port, guid, leaf_switch, switch_port) "
            "SELECT n.id, 'mlx5_' || r, 1, '', n.leaf_switch || '-rail' || r, (n.id % 32)::text "
            "FROM ingest_node n, generate_series(0, 7) r"
        )
        ensure_partitions(start, end)
        # Through ingest's own write (insert_staged): the hot layout a running install has.
        for table, select in (
            (GPU_TABLE, f"t.ts, n.id, g, {GPU_VALUES} FROM {times} t, ingest_node n, generate_series(0, 7) g"),
            (IB_TABLE, f"t.ts, p.id, p.node_id, {IB_VALUES} FROM {times} t, ingest_ibport p"),
        ):  # fmt: skip
            open_stage(table)
            cursor.execute(
                f"INSERT INTO {table.stage} ({', '.join(table.columns)}) SELECT {select}", params
            )
            insert_staged(table, start, end)
            cursor.execute(f"SELECT count(*) FROM {table.name}")
            say(f"set-up: {table.name}: {cursor.fetchone()[0]:,} rows did not fit the hot layout")
        rollups.refresh("gpu", start, end)
        rollups.refresh("ib", start, end)
        for family in Family.values:
            IngestCursor.objects.update_or_create(family=family, defaults={"covered_until": end})
    # A day of rows written in one go is not what a running install reads: there, autovacuum
    # has long set hint bits and visibility maps and the checkpointer has written the pages.
    # Without this the load would race autovacuum and a checkpoint of ~4 M fresh rows.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")
        cursor.execute("CHECKPOINT")


def session_cookie() -> str:
    """A logged-in session (database sessions) for the load's user."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user("load", "load@example.com", "load-pass-123456")
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


#: The request kinds of one user's round, in order.
KINDS = ("overview page", "overview json", "fabric page", "heatmap ib 24h", "heatmap gpu 24h",
         "node page", "node json")  # fmt: skip


def user_paths(nodes: int, rng: random.Random) -> list[tuple[str, str]]:
    """One user's round through the dashboard: (kind, path)."""
    node = f"gpu-{rng.randrange(nodes):04d}"
    paths = ["/", "/api/v1/overview", "/fabric/", "/api/v1/heatmap?metric=ib_tx&window=24h",
             "/api/v1/heatmap?metric=gpu_util&window=24h", f"/nodes/{node}/", f"/api/v1/nodes/{node}"]  # fmt: skip
    return list(zip(KINDS, paths, strict=True))


def browse(port: int, cookie: str, nodes: int, until: float, think: float, seed: int,
           in_step: bool = False) -> list:  # fmt: skip
    """One virtual user until ``until``: [(kind, seconds, status or error)].

    The user starts its round at a random request (``in_step``: at the overview, as every
    other user does) and keeps that order, within the first ``think`` seconds.
    """
    rng, results = random.Random(seed), []
    first = 0 if in_step else rng.randrange(len(KINDS))
    time.sleep(rng.random() * think)  # users do not arrive at the same instant
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Cookie": f"sessionid={cookie}", "Host": "127.0.0.1"}
    while time.monotonic() < until:
        paths = user_paths(nodes, rng)
        for kind, path in paths[first:] + paths[:first]:
            began = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                outcome: object = response.status
            except (OSError, http.client.HTTPException) as exc:
                outcome = type(exc).__name__
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            results.append((kind, time.perf_counter() - began, outcome))
            time.sleep(think)
    conn.close()
    return results


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


Samples = dict[str, list[float]]


def http_load(port: int, cookie: str, args: argparse.Namespace,
              in_step: bool = False) -> tuple[Samples, int]:  # fmt: skip
    """Run the users; print the latency table; return (seconds per request kind, errors)."""
    until = time.monotonic() + args.seconds
    with ThreadPoolExecutor(max_workers=args.users) as pool:
        runs = [pool.submit(browse, port, cookie, args.nodes, until, args.think, seed, in_step)
                for seed in range(args.users)]  # fmt: skip
        results = [item for run in runs for item in run.result()]
    by_kind: Samples = defaultdict(list)
    errors = [r for r in results if r[2] != 200]
    for kind, seconds, _ in results:
        by_kind[kind].append(seconds)
    table(by_kind)
    rate = len(results) / args.seconds
    say(f"requests: {len(results):,} in {args.seconds} s ({rate:.0f}/s), errors: {len(errors)}"
        + (f" e.g. {errors[:3]}" if errors else ""))  # fmt: skip
    return by_kind, len(errors)


def table(by_kind: Samples) -> None:
    """p50 / p95 / max per request kind and over all."""
    say(f"{'request':<18} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for kind, values in [*by_kind.items(), ("ALL", _of_kind(by_kind, "ALL"))]:
        say(f"{kind:<18} {len(values):6d} {1000 * statistics.median(values):8.0f} "
            f"{1000 * percentile(values, 0.95):8.0f} {1000 * max(values):8.0f}")  # fmt: skip


def _of_kind(by_kind: Samples, kind: str) -> list[float]:
    """The seconds of one kind of request, or of every request ("ALL")."""
    return [v for values in by_kind.values() for v in values] if kind == "ALL" else by_kind[kind]


def judge(by_kind: Samples, errors: int) -> bool:
    """Print the goals (every kind's p95 ≤ 300 ms, node page p50 ≤ 150 ms, 0 errors); met?"""
    worst = max((percentile(v, 0.95), kind) for kind, v in by_kind.items())
    node_p50, node_p95 = (
        statistics.median(by_kind["node page"]),
        percentile(by_kind["node page"], 0.95),
    )
    met = worst[0] <= 0.3 and node_p50 <= 0.15 and not errors
    say(f"goal every kind p95 <= 300 ms, node page p50 <= 150 ms, 0 errors -> slowest p95 "
        f"{1000 * worst[0]:.0f} ms ({worst[1]}), node page p50 {1000 * node_p50:.0f} ms / p95 "
        f"{1000 * node_p95:.0f} ms, {errors} errors {'OK' if met else 'ABOVE GOAL'}")  # fmt: skip
    return met


SOURCES = {"0": "rollups (DASHBOARD_NODE_TILES=0, the reference)", "1": "hourly node tiles"}
HANDLERS = {
    "one-hop": ("config.asgi's OneHopASGIHandler", None),
    "django": ("Django's own ASGIHandler (the reference)", "bench.stock_asgi:application"),
}
#: (node page source, HTTP handler) per run, alternated: load from outside the bench falls on each.
RUNS = [("0", "one-hop"), ("1", "one-hop"), ("1", "django")] * 2


def load_both(cookie: str, web: dict, args: argparse.Namespace) -> None:
    """The HTTP load, each run on a fresh server with an empty cache: node pages from the
    rollups (reference) against the node tiles, and config.asgi's one-hop handler against
    Django's own (reference), runs alternated; then each configuration's runs pooled; then
    one run with the users in step (not judged)."""
    from django.core.cache import cache

    from tests.support.processes import run_asgi_server

    def describe(tiles: str, handler: str) -> str:
        return (f"{args.users} users, {args.seconds} s, {args.think} s think time, web server: "
                f"uvicorn, {args.workers} worker process(es), {HANDLERS[handler][0]}; node pages "
                f"from {SOURCES[tiles]}")  # fmt: skip

    pooled: dict[tuple[str, str], tuple[Samples, int]] = {}
    for tiles, handler in RUNS:
        cache.clear()  # the bench's own Redis database: every run starts cold
        env = {
            **web,
            "env": {**web["env"], "DASHBOARD_NODE_TILES": tiles},
            "app": HANDLERS[handler][1],
        }
        with run_asgi_server(**env) as server:
            say(f"\nHTTP: {describe(tiles, handler)}")
            by_kind, errors = http_load(server.port, cookie, args)
            report_rss(server.process.pid, "under HTTP load")
        samples, total = pooled.get((tiles, handler), (defaultdict(list), 0))
        for kind, values in by_kind.items():
            samples[kind] += values
        pooled[tiles, handler] = (samples, total + errors)
    for (tiles, handler), (samples, errors) in pooled.items():
        say(f"\nruns pooled: {describe(tiles, handler)}")
        table(samples)
        judge(samples, errors)
    for label, reference, chosen in (
        ("node pages rollups -> node tiles (one-hop handler)", ("0", "one-hop"), ("1", "one-hop")),
        ("Django's handler -> one-hop handler (node tiles)", ("1", "django"), ("1", "one-hop")),
    ):
        before, after = pooled[reference][0], pooled[chosen][0]
        say(f"\n{label}, same data, runs alternated:")
        for kind in ("node page", "ALL"):
            old, new = (_of_kind(samples, kind) for samples in (before, after))
            say(f"  {kind:<10} p50 {1000 * statistics.median(old):.0f} -> {1000 * statistics.median(new):.0f} ms, "
                f"p95 {1000 * percentile(old, 0.95):.0f} -> {1000 * percentile(new, 0.95):.0f} ms")  # fmt: skip
    cache.clear()
    env = {**web, "env": {**web["env"], "DASHBOARD_NODE_TILES": "1"}}
    with run_asgi_server(**env) as server:
        say(f"\nHTTP, users in step (not judged): every user starts its round at the overview; "
            f"{describe('1', 'one-hop')}")  # fmt: skip
        http_load(server.port, cookie, args, in_step=True)
        report_rss(server.process.pid, "under HTTP load in step")


def node_page_alone(cookie: str, nodes: int, rounds: int = 60) -> None:
    """The node page of ``rounds`` random nodes, one request at a time in this process, cache
    cleared, rollups and tiles alternated per node: what a page costs without the load."""
    from django.core.cache import cache
    from django.test import Client, override_settings

    client, rng = Client(), random.Random(7)
    client.cookies["sessionid"] = cookie
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        path = f"/nodes/gpu-{rng.randrange(nodes):04d}/"
        for tiles in (False, True):
            cache.clear()
            with override_settings(DASHBOARD_NODE_TILES=tiles):
                began = time.perf_counter()
                assert client.get(path, HTTP_HOST="127.0.0.1").status_code == 200
                seconds[tiles].append(time.perf_counter() - began)
    say(f"node page alone ({rounds} random nodes, in process, cache cleared, alternated): p50 / p95 "
        f"rollups {1000 * statistics.median(seconds[False]):.0f} / {1000 * percentile(seconds[False], 0.95):.0f} ms, "
        f"node tiles {1000 * statistics.median(seconds[True]):.0f} / {1000 * percentile(seconds[True], 0.95):.0f} ms")  # fmt: skip


async def _listen(url: str, cookie: str, origin: str, received: dict, ready: asyncio.Event,
                  connected: list) -> None:  # fmt: skip
    from websockets.asyncio.client import connect

    async with connect(url, additional_headers={"Cookie": f"sessionid={cookie}"}, origin=origin,
                       open_timeout=30, max_queue=None) as socket:  # fmt: skip
        await socket.recv()  # hello
        connected.append(1)
        async for raw in socket:
            arrived = time.time()
            event = json.loads(raw)
            if event.get("type") == "ingest.committed":
                received.setdefault(event["covered_until"], []).append(arrived)
            if ready.is_set() and event.get("covered_until") == "stop":
                return


def websocket_fanout(port: int, cookie: str, sockets: int, events: int, end: datetime) -> float:
    """``sockets`` clients; ``events`` ingest commits 2 s apart; returns the worst delay (s)."""
    from django.db import transaction

    from core.live import publish
    from ingest.events import ingest_committed, publish_committed
    from ingest.models import IngestCursor

    received: dict[str, list[float]] = {}
    committed: dict[str, float] = {}
    connected: list[int] = []
    loop = asyncio.new_event_loop()
    ready = asyncio.Event()
    url, origin = f"ws://127.0.0.1:{port}/ws/live/", f"http://127.0.0.1:{port}"

    failures: list[BaseException] = []

    async def one(delay: float) -> None:
        await asyncio.sleep(delay)  # browsers arrive over a few seconds, not in one burst
        try:
            await _listen(url, cookie, origin, received, ready, connected)
        except Exception as exc:  # noqa: BLE001 - counted and reported
            failures.append(exc)

    async def clients() -> None:
        await asyncio.gather(*(one(index * 0.02) for index in range(sockets)))

    thread = threading.Thread(target=lambda: loop.run_until_complete(clients()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while len(connected) < sockets and time.monotonic() < deadline:
        time.sleep(0.1)
    say(f"websocket clients connected: {len(connected)} of {sockets}"
        + (f" (first failure: {failures[0]!r})" if failures else ""))  # fmt: skip
    for k in range(1, events + 1):
        covered = end + timedelta(seconds=30 * k)
        event = ingest_committed(["gpu", "ib"], covered.isoformat(), 65536)
        with transaction.atomic():
            IngestCursor.objects.filter(family__in=["gpu", "ib"]).update(covered_until=covered)

            def after_commit(event: dict = event) -> None:
                committed[event["covered_until"]] = time.time()
                publish_committed(event)  # type: ignore[arg-type]

            transaction.on_commit(after_commit)
        time.sleep(2.0)
    loop.call_soon_threadsafe(ready.set)
    publish(ingest_committed([], "stop", 0))  # every client returns; the loop ends
    thread.join(30)
    worst, complete = 0.0, 0
    for covered_until, at in committed.items():
        arrivals = received.get(covered_until, [])
        delays = [a - at for a in arrivals]
        complete += len(arrivals) == sockets
        worst = max([worst, *delays]) if delays else float("inf")
        say(f"  event {covered_until[11:19]}: {len(arrivals)}/{sockets} clients, "
            f"p50 {1000 * statistics.median(delays or [0]):.0f} ms, max {1000 * max(delays or [0]):.0f} ms")  # fmt: skip
    say(f"events received by every client: {complete}/{events}; worst delay commit -> client: "
        f"{worst:.2f} s (goal <= 2 s) {'OK' if worst <= 2 and complete == events else 'ABOVE GOAL'}")  # fmt: skip
    return worst


def report_rss(server_pid: int, when: str) -> None:
    """Each web worker process's peak RSS against the 300 MB goal."""
    peaks = [peak_rss_mb(pid) for pid in web_processes(server_pid)]
    listed = ", ".join(f"{mb:.0f}" for mb in peaks)
    say(f"web worker peak RSS {when}: {listed} MB (goal <= 300 MB each) "
        f"{'OK' if max(peaks) <= 300 else 'ABOVE GOAL'}")  # fmt: skip


def main() -> None:
    """Set up, load, write the bench_load section of bench/RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument(
        "--think", type=float, default=1.0, help="seconds between a user's requests"
    )
    parser.add_argument("--sockets", type=int, default=200)
    parser.add_argument("--events", type=int, default=5)
    parser.add_argument(
        "--workers", type=int, default=2, help="web worker processes (one per core)"
    )
    args = parser.parse_args()
    total = time.perf_counter()
    recreate_database(BENCH_DB)
    with tempfile.TemporaryDirectory() as workdir:
        os.environ["STATIC_ROOT"] = str(Path(workdir) / "static")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        from tests.support.processes import run_asgi_server

        try:
            call_command("migrate", verbosity=0)
            call_command("collectstatic", interactive=False, verbosity=0)
            end = datetime.fromtimestamp(int(time.time() // 30) * 30, UTC)
            began = time.perf_counter()
            write_data(args.nodes, end)
            say(f"set-up: {args.nodes} nodes, 24 h of GPU + IB samples and rollups in "
                f"{time.perf_counter() - began:.0f} s")  # fmt: skip
            cookie = session_cookie()
            node_page_alone(cookie, args.nodes)
            # A shared machine can take longer than the tests' 30 s to start 2 workers.
            web = {"env": child_env(), "log_dir": Path(workdir), "workers": args.workers,
                   "timeout": 180}  # fmt: skip
            load_both(cookie, web, args)
            # A fresh server: the fan-out figure must not wait behind a backlog of slow pages.
            with run_asgi_server(**web) as server:
                say(f"\nwebsockets: {args.sockets} clients, {args.events} ingest commits 2 s apart, "
                    "fresh web server")  # fmt: skip
                websocket_fanout(server.port, cookie, args.sockets, args.events, end)
                report_rss(server.process.pid, f"with {args.sockets} sockets")
        finally:
            connections.close_all()
            recreate_database(BENCH_DB, drop_only=True)
    say(f"bench wall time: {time.perf_counter() - total:.0f} s")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_section("bench_load", f"## bench_load.py --nodes {args.nodes} ({stamp})\n\n"
                  "```\n" + "\n".join(LINES) + "\n```")  # fmt: skip


if __name__ == "__main__":
    main()
