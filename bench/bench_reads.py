"""Read benchmark: what one steady-state ingest cycle's reads cost Prometheus and ClusterWatch.

    python bench/bench_reads.py [--nodes 4096] [--minutes 4] [--rounds 3] [--workdir DIR]
                                [--head] [--variants 8,6] [--no-decode]

A simulator history of every metric the GPU and IB families read (bench_scale's set-up:
``--minutes`` at a 30 s step, backfilled into a Prometheus of its own; ``--workdir`` keeps
the TSDB; ``--head``: remote-written into a fresh Prometheus' head instead, as a live
Prometheus holds its last hours) is read for one cycle's window (one 30 s step) in several
ways, each ``--rounds`` times in turn (the median is printed; ``--variants`` picks lines):

0. the reference, ingest's reads today: ``step_reads.read_steps`` under
   PROMETHEUS_READ_PATH=query_range (a ``query_range`` per GPU and IB column, XID and each
   family's sampling query, each from its fetch start), folded as ``Collected`` folds them;
8. the same through PROMETHEUS_READ_PATH=remote_read: remote read (SAMPLES, batched) from
   one lookback before each query's first step, the answers computed by ``raw_steps``
   (exactly query_range's: tests/conformance/test_read_paths.py), folded alike;
9. line 0 as ingest reads in the steady state since the sampling queries' context is kept
   between windows (``sources.base.fetch_sampling``): those two queries from the window's
   start step only (line 0 reads them from two of the longest scrape intervals before it);
10, 11. line 9 with a cycle every 2 or 4 steps (INGEST_INTERVAL_SECONDS 60 or 120 at a
   30 s INGEST_STEP_SECONDS): one window of 2 or 4 steps, its costs divided by 2 or 4 (per
   step of data, as line 0's): what reading less often saves, at the cost of freshness;
12. line 9's queries as ``count(<selection>)``: Prometheus finds and reads every series and
   answers one number per query: what touching the series costs, the floor under any read of
   them; 13. line 9's queries without their ``max by`` (the bare selection, every label):
   the least work a read that answers each device's values can ask for;
1. today's range queries decoded into ``Series`` (``decode``);
2-4. each metric's raw series via ``read_raw`` over (window start - one step, window end]:
   remote read with XOR chunks, with SAMPLES, range selectors (``metric[60s]``);
5. one ``query_range`` per family (``max by (__name__, ...) ({__name__=~"a|b|..."})``);
6. one remote-read request (SAMPLES) with a query per metric, the same short window;
7. one remote-read request with one ``__name__=~`` query per family.

Lines 2-7 are not what ingest would need (no lookback: a series' newest sample before the
window is not seen, so they are not exact); they show what a cheaper read could at best save.
Each line: Prometheus CPU seconds (utime + stime from /proc), this process's CPU seconds and
wall seconds, series and samples returned, each beside line 0 (the reference, same run).
Then decode-only CPU per sample for the same answers (``--no-decode`` skips it), and which
read path each backend flavour gets. ``--pprof FILE`` also takes a CPU profile of Prometheus
(``/debug/pprof/profile``) while line 9 runs for ``--pprof-seconds`` and, where ``go`` is on
the PATH (Debian ``golang-go``), prints its shares by part (``go tool pprof -top -cum``).
Writes the ``bench_reads-<nodes>[-head]`` section of bench/RESULTS.md (``--section``: another).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._support import write_section  # noqa: E402
from bench.bench_scale import STEP, cpu_seconds, history_prometheus  # noqa: E402

os.environ.update(LOG_LEVEL="WARNING", PROMETHEUS_TIMEOUT_SECONDS="120")
LINES: list[str] = []
#: Reads that cover several steps of data: their costs are printed per step.
PER_STEPS: dict[Callable[[], tuple[int, int]], int] = {}
_NAME = re.compile(r"[A-Za-z_:][\w:]*")


def say(line: str = "") -> None:
    """Print a result line and keep it for RESULTS.md."""
    print(line, flush=True)
    LINES.append(line)


def todays_queries(client) -> list[tuple[str, str]]:  # noqa: ANN001 - PrometheusClient
    """(PromQL, column kind) of every range query ingest's GPU and IB families make in a cycle."""
    from ingest.queries import DCGM_MARKERS, GPU, IB, promql
    from ingest.sources.dcgm import FETCHED, node_by
    from ingest.sources.infiniband import SPEC, dialects_present

    gpu = client.detect_dialect(DCGM_MARKERS)
    queries = [
        (promql("gpu", gpu, c.name, by=node_by()), c.kind) for c in FETCHED if c.name in GPU[gpu]
    ]
    queries.append((promql("gpu", gpu, "xid", by=node_by()), "gauge"))
    queries.append((promql("gpu", gpu, "sampled_at", by=node_by()), "sampled_at"))
    for dialect in dialects_present(client):
        queries += [
            (promql("ib", dialect, c.name, by=node_by()), c.kind)
            for c in SPEC
            if c.name in IB[dialect]
        ]
        queries.append((promql("ib", dialect, "sampled_at", by=node_by()), "sampled_at"))
    return queries


def family_names(names: list[str]) -> list[list[str]]:
    """The raw metric names split by family (the GPU's DCGM names, the rest IB)."""
    gpu = [n for n in names if n.lower().startswith("dcgm")]
    return [gpu, [n for n in names if n not in gpu]]


def fetch_start(kind: str, start: datetime, step: float, kept: bool = False) -> datetime:
    """Where today's query for a column of ``kind`` starts (``Window.fetch_start``, and the
    sampling context of ``fetch_sampling``: two of the longest scrape intervals, or with
    ``kept``, the previous window's context kept, only the window's start step)."""
    from django.conf import settings

    if kind == "sampled_at" and kept:
        return start
    if kind == "sampled_at":
        longest = settings.INGEST_MAX_SCRAPE_INTERVAL_SECONDS
        return start - timedelta(seconds=-(-2 * longest // step) * step)
    return start + timedelta(seconds=step) if kind == "gauge" else start


def metrics_of(queries: list[tuple[str, str]], known: set[str]) -> list[str]:
    """The metric names those queries read (each once, in order)."""
    names = [n for promql, _ in queries for n in _NAME.findall(promql) if n in known]
    return list(dict.fromkeys(names))


def measured(run: Callable[[], tuple[int, int]], prometheus_pid: int) -> tuple[float, ...]:
    """(Prometheus CPU s, our CPU s, wall s, series, samples) of one ``run``; the seconds per
    step of data where ``run`` reads several (``PER_STEPS``)."""
    server, cpu, wall = cpu_seconds(prometheus_pid), time.process_time(), time.perf_counter()
    series, samples = run()
    steps = PER_STEPS.get(run, 1)
    return (
        (cpu_seconds(prometheus_pid) - server) / steps,
        (time.process_time() - cpu) / steps,
        (time.perf_counter() - wall) / steps,
        series,
        samples,
    )


def counted(answers: list) -> tuple[int, int]:  # noqa: ANN001 - list[Answer]
    """(series, samples) of answers."""
    return sum(len(a.series) for a in answers), sum(
        len(s.points) for a in answers for s in a.series
    )


def variants(client_for, queries, names, window) -> dict[str, Callable[[], tuple[int, int]]]:  # noqa: ANN001
    """The four ways of reading one cycle, by name."""
    from django.test.utils import override_settings

    from ingest.remote_read import SAMPLES, STREAMED_XOR_CHUNKS

    start, end, step = window
    raw_start = start - timedelta(seconds=step)

    def today() -> tuple[int, int]:
        client = client_for("auto")
        return counted(
            [
                client.query_range(q, fetch_start(kind, start, step), end, step)
                for q, kind in queries
            ]
        )  # fmt: skip

    def raw(path: str, types: tuple[int, ...] | None = None) -> Callable[[], tuple[int, int]]:
        def read() -> tuple[int, int]:
            client = client_for(path)
            if types:
                client.remote_read_types = types
            with override_settings(PROMETHEUS_READ_PATH=path):
                return counted([client.read_raw(name, raw_start, end) for name in names])

        return read

    def one_query_per_family() -> tuple[int, int]:
        from ingest.sources.dcgm import node_by

        client, by = client_for("auto"), node_by()
        return counted(
            [
                client.query_range(
                    f'max by (__name__, {by}, gpu, device, port) ({{__name__=~"{"|".join(group)}"}})',
                    start, end, step,
                )
                for group in family_names(names)
            ]
        )  # fmt: skip

    def one_request(selectors: list[str]) -> Callable[[], tuple[int, int]]:
        def read() -> tuple[int, int]:
            return counted([many_read(client_for("remote_read"), selectors, raw_start, end)])

        return read

    def ingests(path: str, kept: bool = False, steps: int = 1) -> Callable[[], tuple[int, int]]:
        """``steps`` > 1: a cycle every ``steps`` steps, reading them all in one window (its
        costs are divided by ``steps`` where printed: per step of data, as line 0's)."""
        wide = (end - timedelta(seconds=step * steps), end, step)

        def read() -> tuple[int, int]:
            return folded(client_for(path), queries, path, wide, kept)

        PER_STEPS[read] = steps
        return read

    def rewritten(form: Callable[[str], str]) -> Callable[[], tuple[int, int]]:
        """Line 9's queries (same windows), each ``form(selection)`` instead."""

        def read() -> tuple[int, int]:
            client = client_for("query_range")
            return counted(
                [
                    client.query_range(form(selection(q)), fetch_start(kind, start, step, True), end, step)
                    for q, kind in queries
                ]
            )  # fmt: skip

        return read

    regex = [f'{{__name__=~"{"|".join(group)}"}}' for group in family_names(names)]
    return {
        "0 today as ingest: query_range + fold": ingests("query_range"),
        "8 read_steps remote_read (exact) + fold": ingests("remote_read"),
        "9 as 0, sampling context kept (now)": ingests("query_range", kept=True),
        "10 as 9, a 60 s cycle, per 30 s step": ingests("query_range", kept=True, steps=2),
        "11 as 9, a 120 s cycle, per 30 s step": ingests("query_range", kept=True, steps=4),
        "12 as 9, count(): touching the series": rewritten(lambda q: f"count({q})"),
        "13 as 9, without max by (every label)": rewritten(lambda q: q),
        "1 today: query_range + orjson": today,
        "2 read_raw remote read, XOR chunks": raw("remote_read", (STREAMED_XOR_CHUNKS,)),
        "3 read_raw remote read, SAMPLES": raw("remote_read", (SAMPLES,)),
        "4 read_raw range_selector": raw("range_selector"),
        "5 query_range, one __name__=~ a family": one_query_per_family,
        "6 remote read SAMPLES, 1 request": one_request(names),
        "7 remote read SAMPLES, __name__=~": one_request(regex),
    }


def selection(query: str) -> str:
    """The expression a ``max by (…) (EXPR)`` query aggregates (the query itself otherwise)."""
    if not query.startswith("max by ("):
        return query
    return query[query.index(")") + 1 :].strip()


def folded(client, queries, path: str, window, kept: bool = False) -> tuple[int, int]:  # noqa: ANN001
    """Ingest's reads of a cycle through ``step_reads.read_steps`` under ``path``, each answer
    folded by (instance, gpu or device, port) as ``Collected.add_answers`` folds them
    (``kept``: the sampling queries' context kept from the previous cycle)."""
    from django.test.utils import override_settings

    from ingest.normalize import Collected
    from ingest.step_reads import read_steps

    start, end, step = window
    plan = [(q, fetch_start(kind, start, step, kept)) for q, kind in queries]
    collected, names = Collected(), [str(i) for i in range(len(plan))]
    with override_settings(PROMETHEUS_READ_PATH=path):
        answers = list(read_steps(client, plan, end, step))
    collected.add_answers(names, iter(answers), _bench_key)
    series = sum(len(r) for _i, r in answers if isinstance(r, list))
    points = sum(len(item["values"]) for _i, r in answers if isinstance(r, list) for item in r)
    return series, points


def _bench_key(labels):  # noqa: ANN001, ANN202
    return (labels.get("instance"), labels.get("gpu") or labels.get("device"), labels.get("port"))


def many_read(client, selectors: list[str], start: datetime, end: datetime):  # noqa: ANN001, ANN201
    """One remote-read request (SAMPLES) with a query per selector, decoded as one Answer."""
    from ingest.prometheus import Answer, Series
    from ingest.remote_read import PROMPB, SAMPLES, decode_samples, matchers

    start_ms, end_ms = round(start.timestamp() * 1000), round(end.timestamp() * 1000)
    request = PROMPB["ReadRequest"](accepted_response_types=[SAMPLES])
    for selector in selectors:
        query = request.queries.add(start_timestamp_ms=start_ms, end_timestamp_ms=end_ms)
        for kind, name, value in matchers(selector):
            query.matchers.add(type=kind, name=name, value=value)
    import cramjam

    body, _ = client._post_read(bytes(cramjam.snappy.compress_raw(request.SerializeToString())), "")
    found, skipped = decode_samples(body, start_ms, end_ms, 1 << 31)  # a bench: no cap
    return Answer([Series(labels, points) for labels, points in found], skipped)


def decode_only(client, names, window, rounds: int) -> None:  # noqa: ANN001
    """CPU per returned sample of decoding the same answers: orjson vs protobuf + XOR."""
    from ingest.prometheus import _checked_result, decode
    from ingest.remote_read import (
        SAMPLES,
        STREAMED_XOR_CHUNKS,
        decode_answer,
        matchers,
        read_request,
    )

    start, end, step = window
    start_ms = round((start - timedelta(seconds=step)).timestamp() * 1000)
    end_ms = round(end.timestamp() * 1000)
    bodies: dict[str, list] = {"json": [], "chunks": [], "samples": []}
    session = client.connection._session
    for name in names:
        form = {"query": f"{name}[{end_ms - start_ms}ms]", "time": f"{end_ms / 1000:.3f}"}
        bodies["json"].append(
            session.post(f"{client.url}/api/v1/query", data=form, timeout=120).content
        )
        for kind, types in (("chunks", (STREAMED_XOR_CHUNKS,)), ("samples", (SAMPLES,))):
            request = read_request(matchers(name), start_ms, end_ms, types)
            bodies[kind].append(client._post_read(request, name))
    import orjson

    decoders = {
        "orjson + decode (range selector JSON)": lambda b: (
            decode(_checked_result(orjson.loads(b), ""), after=start_ms / 1000).series
        ),
        "remote read, XOR chunks": lambda b: decode_answer(b[0], b[1], start_ms, end_ms, 1 << 30)[
            0
        ],
        "remote read, SAMPLES": lambda b: decode_answer(b[0], b[1], start_ms, end_ms, 1 << 30)[0],
    }
    say()
    say(f"decode only (same answers, fetched once; median of {rounds}):")
    reference = None
    for (label, decoder), kind in zip(decoders.items(), bodies, strict=True):
        times, samples = [], 0
        for _ in range(rounds):
            began = time.process_time()
            decoded = [decoder(body) for body in bodies[kind]]
            times.append(time.process_time() - began)
        samples = sum(len(points) for series in decoded for points in _points(series))
        size = sum(len(b if isinstance(b, bytes) else b[0]) for b in bodies[kind])
        seconds = statistics.median(times)
        reference = reference or seconds
        say(f"  {label:<40} {seconds:6.2f} s CPU  {1e6 * seconds / max(samples, 1):6.2f} µs/sample"
            f"  {samples:>10,} samples  {size / 1e6:7.1f} MB   {seconds / reference:5.2f}x")  # fmt: skip


def _points(series: list) -> list:  # noqa: ANN001
    return [s.points if hasattr(s, "points") else s[1] for s in series]


def flavours(client) -> None:  # noqa: ANN001
    """Which read path each backend flavour gets under PROMETHEUS_READ_PATH=auto."""
    from ingest.flavor import PROMETHEUS, VICTORIAMETRICS, read_path_for
    from ingest.step_reads import reads_raw

    say()
    say(f"ingest's GPU and IB reads under auto: {'remote read' if reads_raw(client) else 'query_range'}"
        " on every backend (step_reads.AUTO_READS_RAW); PROMETHEUS_READ_PATH=remote_read: remote read")  # fmt: skip
    say("read_raw's path under PROMETHEUS_READ_PATH=auto, by backend:")
    say(f"  this Prometheus ({client.flavor()}) -> {client.read_path()}")
    say(f"  Prometheus, Mimir (flavour prometheus) -> {read_path_for(PROMETHEUS, 'x')}")
    say("  Thanos Query (flavour prometheus, /api/v1/read answers 404) -> remote_read once, "
        f"then {read_path_for(VICTORIAMETRICS, 'x')} for the process life")  # fmt: skip
    say(f"  VictoriaMetrics -> {read_path_for(VICTORIAMETRICS, 'x')}")


def measure(args: argparse.Namespace, url: str, end: float, prometheus_pid: int) -> None:
    """Every variant ``--rounds`` times in turn; the median of each beside line 1."""
    from ingest.prometheus import PrometheusClient

    def client_for(path: str) -> PrometheusClient:
        return PrometheusClient(url, timeout=120)

    probe = client_for("auto")
    queries = todays_queries(probe)
    names = metrics_of(queries, probe.known_metrics())
    until = datetime.fromtimestamp(end - 60, UTC)
    window = (until - timedelta(seconds=STEP), until, float(STEP))
    runs = variants(client_for, queries, names, window)
    line_9 = runs["9 as 0, sampling context kept (now)"]
    if args.variants:
        wanted = set(args.variants.split(","))
        runs = {name: run for name, run in runs.items() if name.split()[0] in wanted | {"0"}}
    runs["0 today as ingest: query_range + fold"]()  # warm Prometheus' page cache and ours
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            results[name].append(measured(run, prometheus_pid))
    say()
    say(f"one steady-state cycle's reads at {args.nodes:,} nodes: {len(queries)} range queries today, "
        f"{len(names)} metrics read raw; median of {args.rounds} rounds")  # fmt: skip
    say(
        f"{'reads':<38} {'Prometheus CPU':>15} {'our CPU':>12} {'wall':>12} {'series':>9} {'samples':>10}"
    )
    reference = [
        statistics.median(r[i] for r in results["0 today as ingest: query_range + fold"])
        for i in range(3)
    ]
    for name, rows in results.items():
        server, ours, wall = (statistics.median(r[i] for r in rows) for i in range(3))
        series, samples = rows[-1][3], rows[-1][4]
        say(f"{name:<38} {server:6.2f}s {server / reference[0]:5.2f}x {ours:6.2f}s {ours / reference[1]:4.2f}x "
            f"{wall:6.2f}s {wall / reference[2]:4.2f}x {series:>9,} {samples:>10,}")  # fmt: skip
    if not args.no_decode:
        decode_only(probe, names, window, args.rounds)
    if args.pprof:
        profiled(url, line_9, args.pprof, args.pprof_seconds)
    flavours(probe)


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}


def _seconds(text: str) -> float | None:
    """Seconds of a pprof duration (``0``, ``150ms``, ``1.5s``, ``2.1mins``); None if not one."""
    found = re.fullmatch(r"([\d.]+)(ns|us|µs|ms|s|mins|hrs)?", text)
    if found is None or (found.group(2) is None and float(found.group(1)) != 0):
        return None
    return float(found.group(1)) * _UNITS.get(found.group(2) or "s", 1.0)


#: Where Prometheus spends a read's CPU, by function in its CPU profile (names of Prometheus
#: 2.42, Debian's; another version may lack some: printed as not in the profile).
PARTS = (
    ("HTTP API: everything a query costs", "net/http.(*conn).serve"),
    ("  PromQL evaluation", "promql.(*evaluator).Eval"),
    ("    finding the series (index, postings, labels)", "promql.checkAndExpandSeriesSet"),
    ("      of which sorting them (head)", "tsdb.(*headIndexReader).SortedPostings"),
    ("    reading samples from chunks", "tsdb.(*populateWithDelSeriesIterator).Next"),
    ("    aggregation (max by)", "promql.(*evaluator).aggregation"),
    ("  encoding the JSON answer", "api/v1.(*API).respond"),
    ("    of which label sets", "labels.Labels.MarshalJSON"),
    ("garbage collection (background marking)", "runtime.gcBgMarkWorker"),
)


def profiled(url: str, run: Callable[[], tuple[int, int]], path: Path, seconds: int) -> None:
    """A CPU profile of Prometheus while ``run`` (line 9) loops; its shares by part (``PARTS``)."""
    import shutil
    import subprocess
    import threading
    import urllib.request

    cycles, stop = [0], time.monotonic() + seconds + 2

    def loop() -> None:
        while time.monotonic() < stop:
            run()
            cycles[0] += 1

    reader = threading.Thread(target=loop)
    reader.start()
    with urllib.request.urlopen(
        f"{url}/debug/pprof/profile?seconds={seconds}", timeout=seconds + 60
    ) as answer:
        path.write_bytes(answer.read())
    reader.join()
    say()
    say(f"Prometheus CPU profile over {seconds} s of line 9 in a loop ({cycles[0]} cycles): {path}")
    go = shutil.which("go")
    if not go:
        say("  (no `go` on the PATH: read it with `go tool pprof -top -cum FILE`)")
        return
    top = subprocess.run(
        [go, "tool", "pprof", "-top", "-cum", "-nodefraction=0", "-nodecount=5000", str(path)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    total = re.search(r"Total samples = (\S+)", top)
    whole = _seconds(total.group(1)) if total else None
    if not whole:
        say("  (the profile has no samples)")
        return
    cum = {}
    for line in top.splitlines():
        fields = line.split()
        if len(fields) >= 6 and _seconds(fields[3]) is not None:
            cum[fields[5]] = _seconds(fields[3])
    say(f"  {'all of Prometheus (samples in the profile)':<52} {whole:7.2f} s  100 %")
    for label, function in PARTS:
        seconds_in = next((v for name, v in cum.items() if name.endswith(function)), None)
        share = "not in the profile" if seconds_in is None else (
            f"{seconds_in:7.2f} s {100 * seconds_in / whole:4.0f} %"
        )  # fmt: skip
        say(f"  {label:<52} {share}")


def main() -> None:
    """Set up (or reuse) the history, measure, write the section of bench/RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--minutes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the history TSDB here")
    parser.add_argument("--variants", default="", help="only these line numbers (0 always)")
    parser.add_argument("--no-decode", action="store_true", help="skip the decode-only lines")
    parser.add_argument(
        "--head", action="store_true", help="history by remote write into the head, not blocks"
    )
    parser.add_argument("--section", default="", help="RESULTS.md section (default by nodes)")
    parser.add_argument("--pprof", type=Path, default=None, help="save a Prometheus CPU profile")
    parser.add_argument("--pprof-seconds", type=int, default=30)
    args = parser.parse_args()
    total = time.perf_counter()
    with contextlib.ExitStack() as stack:
        workdir = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        workdir.mkdir(parents=True, exist_ok=True)
        if args.head:
            from tests.support.remote_write import head_prometheus

            prometheus, end = head_prometheus(args.nodes, args.minutes, workdir, say)
        else:
            prometheus, end = history_prometheus(args.nodes, args.minutes, workdir)
        stack.callback(prometheus.stop)
        os.environ["PROMETHEUS_URL"] = prometheus.url
        import django

        django.setup()
        from core.gc_tuning import tune_gc

        tune_gc()  # this process does a worker's ingest: its GC thresholds too
        measure(args, prometheus.url, end, prometheus.process.pid)
    say(f"bench wall time: {time.perf_counter() - total:.0f} s")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = "-head" if args.head else ""
    title = f"## bench_reads.py {' '.join(sys.argv[1:])} ({stamp})"
    write_section(
        args.section or f"bench_reads-{args.nodes}{head}",
        f"{title}\n\n```\n" + "\n".join(LINES) + "\n```",
    )


if __name__ == "__main__":
    main()
