"""Remote write benchmark: what pushing each cycle's samples to ClusterWatch would cost Prometheus,
beside what today's reads of the same cycle cost it (issue 19, acceptance 1: the lever not yet
measured by bench_reads).

    python bench/bench_remote_write.py [--nodes 4096] [--warmup 6] [--steps 4] [--rounds 3]
                                       [--settle 25] [--unrelated K] [--per-send N]
                                       [--receiver clusterwatch|sink] [--receivers K]

Two Prometheus processes hold the same data, fed by remote write into their heads
(``--web.enable-remote-write-receiver``, as bench_reads ``--head``): "off" has no
``remote_write``; "on" forwards to a local receiver (``manage.py push_receiver``, push
mode's, by default; ``--receiver sink``: bench/remote_write_sink.py, which only decodes) the series ingest's GPU and IB families read, with the ``write_relabel_configs``
a site would write (``keep`` on ``__name__``), default queue settings. The simulator's
history (every family bench_ingest backfills, so the WAL also holds series that are not
forwarded) is stamped from 30 minutes ahead, so every sample is newer than the "on"
process' WAL watcher start and is sent.

1. ``--warmup`` steps are fed to both (series created); today's reads of one cycle
   (bench_reads' line 9: ingest's ``query_range`` reads with the sampling context kept,
   folded) run ``--rounds`` times on "off": Prometheus CPU and ours per cycle, the reference.
2. ``--steps`` more steps are fed one at a time to each process in turn (the order
   alternating), each measured over the same ``--settle`` seconds from the feed's start
   (longer only if "on"'s receiver has not had every sample by then, which is printed;
   each read round and each step starts once all three processes are idle, < 5 % of a core):
   Prometheus CPU of "on" minus "off" is what forwarding one cycle costs it; the
   receiver's CPU (each series' label dict and samples) is what decoding it costs ClusterWatch.
   ``--unrelated K`` also writes K times as many series of a metric that is not forwarded;
   ``--per-send N`` sets ``queue_config.max_samples_per_send``. ``--receivers K``: K push
   receivers (``--shard i/K``) behind ``push_config.remote_write_block``'s hashmod split,
   their CPU summed, the busiest one's printed too (does each keep up with the cycle?).
3. With push mode's receiver: ingest's reads of the last cycle through it (INGEST_PUSH_URL),
   ``--rounds`` times: Prometheus CPU (the steps it still reads), the receiver's and
   ingest's CPU; then each side's whole cost per cycle beside today's reads, and the
   receiver's resident memory.

Writes the ``bench_remote_write-<nodes>`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._support import free_port, write_section  # noqa: E402
from bench.bench_reads import LINES, folded, measured, metrics_of, say, todays_queries  # noqa: E402
from bench.bench_scale import STEP, cpu_seconds  # noqa: E402
from ingest.push_config import remote_write_block  # noqa: E402
from tests.support.processes import wait_until  # noqa: E402
from tests.support.prometheus import stop_process  # noqa: E402
from tests.support.remote_write import (  # noqa: E402
    post_bodies,
    receiver_prometheus,
    series_of,
    write_requests,
)

#: How far ahead of the wall clock the history is stamped (see the module docstring).
AHEAD_SECONDS = 1800
TOKEN = "bench-push-token"
PUSH_RECEIVERS: set[int] = set()


def forwarding(port: int, names: list[str], per_send: int = 0, token: str = "") -> str:
    """The ``remote_write`` block a site would add: only the metrics ingest reads
    (``per_send``: ``queue_config.max_samples_per_send``, 0 for Prometheus' default)."""
    queue = f"    queue_config:\n      max_samples_per_send: {per_send}\n" if per_send else ""
    auth = f"    authorization:\n      credentials: {token}\n" if token else ""
    return (
        "remote_write:\n"
        f"  - url: http://127.0.0.1:{port}/api/v1/write\n"
        "    remote_timeout: 30s\n"
        f"{auth}"
        "    write_relabel_configs:\n"
        "      - source_labels: [__name__]\n"
        f"        regex: '{'|'.join(names)}'\n"
        "        action: keep\n" + queue
    )


def by_step(series: Mapping[tuple, list[tuple[int, float]]]) -> dict[int, dict[tuple, list]]:
    """The samples regrouped by timestamp (ms), each a series -> [(ms, value)] of its own."""
    steps: dict[int, dict[tuple, list]] = {}
    for key, samples in series.items():
        for ms, value in samples:
            steps.setdefault(ms, {})[key] = [(ms, value)]
    return dict(sorted(steps.items()))


def add_unrelated(steps: dict[int, dict[tuple, list]], nodes: int, times: float) -> int:
    """Add ``times`` x each step's series of a metric nobody forwards (a real Prometheus' WAL
    also holds node_exporter's, kube-state-metrics' and others' series, which the WAL watcher
    reads and drops); returns the series added per step."""
    per_node = round(times * max(len(step) for step in steps.values()) / nodes)
    keys = [
        (("__name__", "bench_unrelated_total"), ("instance", f"node-{n:05d}:9100"),
         ("job", "node"), ("series", str(j)))
        for n in range(nodes)
        for j in range(per_node)
    ]  # fmt: skip
    for i, (ms, step) in enumerate(steps.items()):
        for k, key in enumerate(keys):
            step[key] = [(ms, float(i * 1000 + k % 997))]
    return len(keys)


def sink_stats(port: int) -> dict[str, int]:
    """The receiver's counters: the sink's /stats, or ClusterWatch's receiver's /metrics."""
    if port in PUSH_RECEIVERS:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read().decode()
        values = dict(line.split(" ", 1) for line in text.splitlines() if line[:1] != "#")
        return {
            "samples": int(values["clusterwatch_push_samples_received_total"])
            + int(values["clusterwatch_push_samples_ignored_total"]),
            "held": int(values["clusterwatch_push_samples"]),
        }
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as answer:
        return json.loads(answer.read())


def start_receiver(
    kind: str, port: int, sender_url: str, first: float, end: float, shard: str = ""
) -> subprocess.Popen[bytes]:
    """The receiver process: ClusterWatch's (manage.py push_receiver: its data complete from
    a lookback before the ``first`` stamp, its clock past the ``end`` stamp, so every step of
    the history fed is one it answers) or the counting sink."""
    if kind == "sink":
        script = Path(__file__).with_name("remote_write_sink.py")
        return subprocess.Popen([sys.executable, str(script), str(port)])
    PUSH_RECEIVERS.add(port)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "INGEST_PUSH_TOKEN": TOKEN,
        "INGEST_PUSH_SENDER_URL": sender_url,
        "INGEST_PUSH_RETENTION_SECONDS": "7200",  # the whole replay stays in its window
    }
    manage = Path(__file__).resolve().parents[1] / "manage.py"
    offset = str(end + 60 - time.time())
    command = [sys.executable, str(manage), "push_receiver", "--listen", f"127.0.0.1:{port}"]
    replay = ["--clock-offset", offset, "--data-from", str(first - 360)]
    sharded = ["--shard", shard] if shard else []
    return subprocess.Popen([*command, *replay, *sharded], env=env)


def start_receivers(args, ports, on_port, stamps, workdir, names):  # noqa: ANN001, ANN201
    """The ``--receivers`` receiver processes (sharded when several, each started and
    answering) and the ``remote_write`` block that forwards to them."""
    first, end = stamps
    processes = []
    for index, port in enumerate(ports):
        shard = f"{index}/{args.receivers}" if args.receivers > 1 else ""
        sender = f"http://127.0.0.1:{on_port}"
        processes.append(start_receiver(args.receiver, port, sender, first, end, shard))
    for port in ports:
        wait_until(lambda: _answers(port), 60, "the receiver to start", interval=0.2)  # noqa: B023 - called at once
    if args.receivers == 1:
        token = TOKEN if args.receiver == "clusterwatch" else ""
        return processes, forwarding(ports[0], names, args.per_send, token)
    token_file = workdir / "token"
    token_file.write_text(TOKEN)
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    return processes, remote_write_block(urls, "|".join(names), str(token_file))


def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def received(ports: list[int], key: str = "samples") -> int:
    """A counter summed over every receiver."""
    return sum(sink_stats(port)[key] for port in ports)


def settled(ports: list[int], wait: float = 5.0, limit: float = 300.0) -> None:
    """Until the receivers' sample count has not moved for ``wait`` seconds."""
    deadline, last, since = time.monotonic() + limit, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = received(ports)
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= wait:
            return
        time.sleep(0.5)


def quiet(*pids: int, idle: float = 0.05, limit: float = 120.0) -> None:
    """Until none of ``pids`` used more than ``idle`` of a core over the last second (garbage
    collection and head work after the last feed would otherwise count in what is measured)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = [cpu_seconds(pid) for pid in pids]
        time.sleep(1.0)
        if all(cpu_seconds(pid) - b <= idle for pid, b in zip(pids, before, strict=True)):
            return


def step_cost(prometheus, bodies, settle: float, sink=None) -> tuple[float, float, float, float]:  # noqa: ANN001
    """(Prometheus CPU s, receivers' CPU s, seconds until received, window s, the busiest
    receiver's CPU s) of feeding one step."""
    pid = prometheus.process.pid
    server = cpu_seconds(pid)
    pids = sink["pids"] if sink else []
    receivers = [cpu_seconds(p) for p in pids]
    began = time.monotonic()
    post_bodies(prometheus.url, bodies)
    got = 0.0
    if sink:
        wait_until(
            lambda: received(sink["ports"]) >= sink["expected"],
            300, "the receiver to get every sample", interval=0.2,
        )  # fmt: skip
        got = time.monotonic() - began
    time.sleep(max(0.0, began + settle - time.monotonic()))
    window = time.monotonic() - began
    used = [cpu_seconds(p) - b for p, b in zip(pids, receivers, strict=True)]
    return (cpu_seconds(pid) - server, sum(used), got, window, max(used, default=0.0))


def main() -> None:  # noqa: PLR0915 - one linear bench
    """Set up, measure, write the section of bench/RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=6)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settle", type=float, default=25.0)
    parser.add_argument(
        "--unrelated", type=float, default=0.0,
        help="also write this many times the simulator's series of a metric not forwarded",
    )  # fmt: skip
    parser.add_argument(
        "--per-send", type=int, default=0, help="queue_config.max_samples_per_send (0: default)"
    )
    parser.add_argument("--receivers", type=int, default=1, help="push receivers (shards)")
    parser.add_argument(
        "--receiver", choices=("clusterwatch", "sink"), default="clusterwatch",
        help="ClusterWatch's push receiver (then push mode's reads are measured) or a counting sink",
    )  # fmt: skip
    args = parser.parse_args()
    total = time.perf_counter()
    os.environ.setdefault("PROMETHEUS_URL", "http://127.0.0.1:9")
    import django

    django.setup()
    from core.gc_tuning import tune_gc

    tune_gc()  # this process does a worker's ingest: its GC thresholds too
    from bench.bench_ingest import HISTORY_FAMILIES
    from ingest.prometheus import PrometheusClient
    from simulator import Cluster, ClusterSpec, ExporterOptions, write_history

    with contextlib.ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        first = float(int(time.time() // STEP) * STEP + AHEAD_SECONDS)
        end = first + (args.warmup + args.steps) * STEP
        cluster = Cluster(
            ClusterSpec(
                nodes=args.nodes,
                seed=1,
                epoch=datetime.fromtimestamp(end, UTC),
                exporters=ExporterOptions(node_ib_dual_port_hca=False),  # as bench_scale's
            )
        )
        began = time.perf_counter()
        history = workdir / "h.om"
        stats = write_history(cluster, first, end, float(STEP), history, HISTORY_FAMILIES)
        steps = by_step(series_of(history))
        history.unlink()
        if args.unrelated:
            extra = add_unrelated(steps, args.nodes, args.unrelated)
            say(f"set-up: {extra:,} series per step added that are not forwarded (--unrelated)")
        say(f"set-up: history {stats.samples:,} samples, {len(steps)} steps, "
            f"{time.perf_counter() - began:.0f} s")  # fmt: skip
        stamps = list(steps)
        off = receiver_prometheus(workdir / "off", timeout=120)
        stack.callback(off.stop)
        post_bodies(off.url, write_requests(steps[stamps[0]]))
        probe = PrometheusClient(off.url, timeout=120)
        queries = todays_queries(probe)
        names = metrics_of(queries, probe.known_metrics())
        ports, on_port = [free_port() for _ in range(args.receivers)], free_port()
        processes, forward = start_receivers(args, ports, on_port, (first, end), workdir, names)
        for process in processes:
            stack.callback(stop_process, process)
        pids = [process.pid for process in processes]
        on = receiver_prometheus(workdir / "on", forward, timeout=120, port=on_port)
        stack.callback(on.stop)
        kept = set(names)
        bodies = {ms: list(write_requests(step)) for ms, step in steps.items()}
        forwarded = {ms: sum(key[0][1] in kept for key in step) for ms, step in steps.items()}
        fed = {ms: len(step) for ms, step in steps.items()}
        del steps
        post_bodies(on.url, bodies[stamps[0]])
        for ms in stamps[1 : args.warmup]:
            post_bodies(off.url, bodies[ms])
            post_bodies(on.url, bodies[ms])
        settled(ports)
        say(f"set-up: {args.warmup} warm-up steps fed to both, {received(ports):,} "
            f"samples forwarded; {time.perf_counter() - total:.0f} s")  # fmt: skip

        quiet(off.process.pid, on.process.pid, *pids)
        until = datetime.fromtimestamp(stamps[args.warmup - 1] / 1000, UTC)
        window = (until - timedelta(seconds=STEP), until, float(STEP))
        reads = []
        for _ in range(args.rounds):
            quiet(off.process.pid, on.process.pid, *pids)
            reads.append(
                measured(lambda: folded(probe, queries, "query_range", window, kept=True), off.process.pid)
            )  # fmt: skip
        reads_server = statistics.median(r[0] for r in reads)
        reads_ours = statistics.median(r[1] for r in reads)
        reads_wall = statistics.median(r[2] for r in reads)

        costs: dict[str, list[tuple[float, ...]]] = {"off": [], "on": []}
        for i, ms in enumerate(stamps[args.warmup :]):
            sink = {"pids": pids, "ports": ports, "expected": received(ports) + forwarded[ms]}
            order = [("off", off, None), ("on", on, sink)]
            for name, prometheus, receiver in order if i % 2 == 0 else order[::-1]:
                quiet(off.process.pid, on.process.pid, *pids)
                costs[name].append(step_cost(prometheus, bodies[ms], args.settle, receiver))
        pushed = None
        if args.receiver == "clusterwatch":
            pushed = push_reads_cost(args, on, pids, ports, queries, stamps, kept)
            pushed["rss"] = sum(rss_mb(pid) for pid in pids)
            pushed["held"] = received(ports, "held")
            pushed["busiest_taking"] = statistics.median(r[4] for r in costs["on"])
            pushed["receivers"] = args.receivers

    measured_ms = stamps[args.warmup :]
    median = lambda rows, i: statistics.median(r[i] for r in rows)  # noqa: E731
    ingest_off, ingest_on = median(costs["off"], 0), median(costs["on"], 0)
    forwarding_cost = ingest_on - ingest_off
    receiver = median(costs["on"], 1)
    say()
    say(f"one 30 s cycle at {args.nodes:,} nodes: {len(queries)} range queries today over "
        f"{len(names)} metrics; {statistics.median(fed[m] for m in measured_ms):,.0f} series "
        f"written per step, {statistics.median(forwarded[m] for m in measured_ms):,.0f} of them "
        f"forwarded; medians of {args.rounds} read rounds and {args.steps} steps")  # fmt: skip
    say(f"{'':<58} {'Prometheus CPU':>16} {'ClusterWatch CPU':>18}")
    say(f"{'today: reads of one cycle (query_range, context kept)':<58} {reads_server:8.2f}s 1.00x "
        f"{reads_ours:9.2f}s 1.00x   (wall {reads_wall:.2f} s)")  # fmt: skip
    say(f"{'remote write: forwarding one cycle (on - off)':<58} {forwarding_cost:8.2f}s "
        f"{forwarding_cost / reads_server:4.2f}x {receiver:9.2f}s {receiver / reads_ours:4.2f}x"
        f"   (receiver: every series' labels and samples; max_samples_per_send {args.per_send or 'default'})")  # fmt: skip
    say(f"  Prometheus taking the step in by remote write: off {ingest_off:.2f} s, on {ingest_on:.2f} s "
        f"per step (each over a {args.settle:.0f} s window)")  # fmt: skip
    if args.steps > 1:
        spread = (
            statistics.variance(r[0] for r in costs["on"]) / args.steps
            + statistics.variance(r[0] for r in costs["off"]) / args.steps
        ) ** 0.5
        mean = statistics.mean(r[0] for r in costs["on"]) - statistics.mean(
            r[0] for r in costs["off"]
        )
        say(f"  forwarding, mean on - off: {mean:.2f} s +- {spread:.2f} s (standard error), "
            f"{mean / reads_server:.2f}x today's reads")  # fmt: skip
    say("  per step, off / on / receiver CPU s, seconds until the receiver had it all:")
    for (a, *_), (b, r, got, window, *_) in zip(costs["off"], costs["on"], strict=True):
        say(f"    {a:6.2f} {b:6.2f} {r:6.2f}   {got:5.1f} s of a {window:.1f} s window")
    if pushed is not None:
        say_push(pushed, receiver, forwarding_cost, (reads_server, reads_ours, reads_wall))
    say(f"bench wall time: {time.perf_counter() - total:.0f} s")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    per_send = f" --per-send {args.per_send}" if args.per_send else ""
    per_send += f" --unrelated {args.unrelated:g}" if args.unrelated else ""
    per_send += " --receiver sink" if args.receiver == "sink" else ""
    per_send += f" --receivers {args.receivers}" if args.receivers > 1 else ""
    title = (
        f"## bench_remote_write.py --nodes {args.nodes} --steps {args.steps}{per_send} ({stamp})"
    )
    write_section(
        f"bench_remote_write-{args.nodes}{per_send.replace(' --', '-').replace(' ', '-')}",
        f"{title}\n\n```\n" + "\n".join(LINES) + "\n```",
    )


def push_reads_cost(args, on, pids: list[int], ports: list[int], queries, stamps, kept) -> dict:  # noqa: ANN001
    """Push mode's reads of the last measured cycle, ``--rounds`` times: Prometheus ("on", the
    sender) CPU, ingest's and the receiver's CPU, wall; medians. Every step must be pushed."""
    from django.test.utils import override_settings

    from ingest import push_reads
    from ingest.prometheus import PrometheusClient

    sender = PrometheusClient(on.url, timeout=120)
    until = datetime.fromtimestamp(stamps[-1] / 1000, UTC)
    window = (until - timedelta(seconds=STEP), until, float(STEP))
    before = dict(push_reads.STATS)
    rounds = []
    urls = ",".join(f"http://127.0.0.1:{port}" for port in ports)
    with override_settings(INGEST_PUSH_URL=urls, INGEST_PUSH_TOKEN=TOKEN):
        for _ in range(args.rounds):
            quiet(on.process.pid, *pids)
            started = [cpu_seconds(pid) for pid in pids]
            server, ours, wall, series, points = measured(
                lambda: folded(sender, queries, "query_range", window, kept=True), on.process.pid
            )
            used = [cpu_seconds(pid) - b for pid, b in zip(pids, started, strict=True)]
            rounds.append((server, ours, sum(used), wall, series, points, max(used)))
    pulled = push_reads.STATS["pulled_runs"] - before["pulled_runs"]
    failures = push_reads.STATS["failures"] - before["failures"]
    if pulled or failures:
        say(f"  WARNING: push reads pulled {pulled} runs from Prometheus, {failures} failures")
    return {
        key: statistics.median(r[i] for r in rounds)
        for i, key in enumerate(
            ("server", "ingest", "receiver", "wall", "series", "points", "busiest")
        )
    } | {"pulled": pulled, "failures": failures}


def say_push(
    pushed: dict, taking: float, forwarding: float, today: tuple[float, float, float]
) -> None:
    """Push mode's lines: its reads, and each side's whole cost per cycle, beside today's."""
    reads_server, reads_ours, reads_wall = today
    answering = pushed["ingest"] + pushed["receiver"]
    total = taking + answering
    say(f"{'push mode: reads of one cycle from the receiver':<58} {pushed['server']:8.2f}s "
        f"{pushed['server'] / reads_server:4.2f}x {answering:9.2f}s {answering / reads_ours:4.2f}x"
        f"   (wall {pushed['wall']:.2f} s, {pushed['wall'] / reads_wall:.2f}x; ingest "
        f"{pushed['ingest']:.2f} s + receiver {pushed['receiver']:.2f} s; {pushed['series']:,.0f} "
        f"series, {pushed['points']:,.0f} points; runs pulled {pushed['pulled']})")  # fmt: skip
    say(f"push mode, ClusterWatch CPU per cycle: receiver taking the step {taking:.2f} s + "
        f"answering {pushed['receiver']:.2f} s + ingest {pushed['ingest']:.2f} s = {total:.2f} s, "
        f"{total / reads_ours:.2f}x today's {reads_ours:.2f} s")  # fmt: skip
    sender = forwarding + pushed["server"]
    say(f"push mode, Prometheus CPU per cycle: forwarding {forwarding:.2f} s + reads "
        f"{pushed['server']:.2f} s = {sender:.2f} s, {sender / reads_server:.2f}x today's "
        f"{reads_server:.2f} s")  # fmt: skip
    say(f"push receiver: {pushed['rss']:.0f} MB resident, {pushed['held']:,} samples held")
    if pushed.get("receivers", 1) > 1:
        busiest = pushed["busiest_taking"] + pushed["busiest"]
        say(f"  {pushed['receivers']} receivers: the busiest took {pushed['busiest_taking']:.2f} s "
            f"per step + answered {pushed['busiest']:.2f} s = {busiest:.2f} s of CPU per 30 s "
            f"cycle (one core each)")  # fmt: skip


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError):
        return sink_stats(port) is not None
    return False


if __name__ == "__main__":
    main()
