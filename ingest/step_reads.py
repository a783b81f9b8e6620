"""The GPU and IB families' per-step reads: remote read where it applies, else ``query_range``.

``read_steps`` keeps ``PrometheusClient.query_ranges``' contract ((index, ``data.result``)
per query, a malformed answer as its ``PrometheusError``), so ``normalize.Collected`` and
``ingest.sampling`` see the same answers whichever way they were read. On the remote-read
path each query that ``raw_steps.step_query`` parses is read as raw samples (``SAMPLES``,
staleness markers kept) from one lookback before its first step to the window end, and
its answer is computed by ``raw_steps.step_answer``; any other query goes to
``query_range``. PROMETHEUS_READ_PATH=remote_read chooses it; ``auto`` keeps query_range
(``AUTO_READS_RAW``: what the exact reads cost ClusterWatch, docs/scaling.md "Reading raw
samples"), and would otherwise choose by flavour: a backend without remote read
(VictoriaMetrics; Thanos Query answers 404 once, then for the process life) keeps
``query_range``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import datetime

import cramjam
from django.conf import settings

from . import push_reads
from .flavor import PROMETHEUS_LOOKBACK_SECONDS, REMOTE_READ, refuse_remote_read
from .prometheus import (
    AnswerTooLarge,
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    RemoteReadUnsupported,
)
from .raw_steps import StepQuery, grid, step_answer, step_query
from .remote_read import (
    SAMPLES,
    KeptSeries,
    RemoteReadError,
    decode_tails,
    matchers,
    read_request_of,
)

log = logging.getLogger(__name__)
LOOKBACK_MS = round(PROMETHEUS_LOOKBACK_SECONDS * 1000)
#: Per backend URL: whether a sample exactly one lookback old still counts (Prometheus 2).
_CLOSED: dict[str, bool] = {}


#: Per backend URL: the most queries one remote-read request has carried without its answer
#: going over PROMETHEUS_MAX_ANSWER_BYTES (halved each time one does; asked again per process).
_BATCH: dict[str, int] = {}
#: Where the batch size starts: every query of one read (a family's columns).
MAX_BATCH = 64
Planned = tuple[int, StepQuery, datetime]


#: Whether ``PROMETHEUS_READ_PATH=auto`` reads the families through remote read where the
#: backend has it. Off: at 512 nodes (history in the head, bench/RESULTS.md "bench_reads")
#: these exact reads cost Prometheus 0.83x of query_range's CPU but ClusterWatch 3.0x and
#: 1.26x the wall time, since a step's value needs every sample of the 5-minute lookback.
AUTO_READS_RAW = False


def reads_raw(client: PrometheusClient) -> bool:
    """True when the families' step reads go through remote read for this backend:
    PROMETHEUS_READ_PATH=remote_read, or auto with ``AUTO_READS_RAW`` where the flavour has it."""
    setting = settings.PROMETHEUS_READ_PATH
    if setting == "auto":
        return AUTO_READS_RAW and client.read_path() == REMOTE_READ
    return setting == REMOTE_READ


def read_steps(
    client: PrometheusClient, queries: Sequence[tuple[str, datetime]], end: datetime, step: float
) -> Iterator[tuple[int, object]]:
    """(index, ``data.result``) of each range query ``(promql, start)`` up to ``end``, in order:
    in push mode (INGEST_PUSH_URL) from the receiver where it can (``ingest.push_reads``),
    the rest from Prometheus (``read_pulled``)."""
    if not push_reads.enabled():
        yield from read_pulled(client, queries, end, step)
        return

    def pull(
        some: Sequence[tuple[str, datetime]], until: datetime, offset: int
    ) -> Iterator[tuple[int, object]]:
        for index, result in read_pulled(client, some, until, step):
            yield offset + index, result

    closed = lookback_closed(client)
    yield from push_reads.read_pushed(client, queries, end, step, closed, pull)


def read_pulled(
    client: PrometheusClient, queries: Sequence[tuple[str, datetime]], end: datetime, step: float
) -> Iterator[tuple[int, object]]:
    """(index, ``data.result``) of each range query ``(promql, start)`` up to ``end``, in order.

    The queries ``step_query`` parses go several to a remote-read request (what a request
    costs Prometheus beside its series: bench/RESULTS.md "bench_reads"); an answer over the
    size cap is asked again as two halves, a single query's as ``query_range`` (which cuts
    its window instead).
    """
    pending: list[Planned] = []
    for index, (promql, start) in enumerate(queries):
        parsed = step_query(promql) if reads_raw(client) and start <= end else None
        if parsed is not None:
            pending.append((index, parsed, start))
            if len(pending) < _BATCH.get(client.url, MAX_BATCH):
                continue
        yield from _flushed(client, pending, queries, end, step)
        pending = []
        if parsed is None:
            yield from _ranged(client, index, promql, start, end, step)
    yield from _flushed(client, pending, queries, end, step)


def _ranged(
    client: PrometheusClient, index: int, promql: str, start: datetime, end: datetime, step: float
) -> Iterator[tuple[int, object]]:
    for _index, result in client.query_ranges([(promql, start)], end, step):
        yield index, result


def _flushed(
    client: PrometheusClient,
    batch: list[Planned],
    queries: Sequence[tuple[str, datetime]],
    end: datetime,
    step: float,
) -> Iterator[tuple[int, object]]:
    """The answers of a batch of parsed queries: one request, or halves, or query_range."""
    if not batch:
        return
    try:
        answers = _raw_results(client, batch, end, step)
    except RemoteReadUnsupported as exc:
        if settings.PROMETHEUS_READ_PATH != "auto":
            raise
        refuse_remote_read(client.url)
        log.warning("prometheus: %s; reading through query_range from now on", exc)
        answers = None
    except AnswerTooLarge:
        if len(batch) > 1:
            half = len(batch) // 2
            _BATCH[client.url] = max(1, min(half, _BATCH.get(client.url, MAX_BATCH)))
            yield from _flushed(client, batch[:half], queries, end, step)
            yield from _flushed(client, batch[half:], queries, end, step)
            return
        answers = None  # query_range cuts the window in halves until each answer fits
    except PrometheusUnavailable:
        raise
    except PrometheusError as exc:
        answers = [exc] * len(batch)
    for position, (index, _query, start) in enumerate(batch):
        if answers is None:
            yield from _ranged(client, index, queries[index][0], start, end, step)
        else:
            yield index, answers[position]


def lookback_closed(client: PrometheusClient) -> bool:
    """True when the backend's engine counts a sample exactly one lookback old (Prometheus 2,
    by buildinfo's version; 3 and later do not); asked once per backend URL."""
    if client.url not in _CLOSED:
        try:
            data = client._guarded(lambda: client._get("status/buildinfo"))
        except PrometheusUnavailable:
            return True  # not cached: asked again next time
        except PrometheusError:
            data = None
        version = str(data.get("version", "")) if isinstance(data, dict) else ""
        major = version.split(".", 1)[0]
        _CLOSED[client.url] = not (major.isdigit() and int(major) >= 3)
    return _CLOSED[client.url]


def _raw_results(
    client: PrometheusClient, batch: list[Planned], end: datetime, step: float
) -> list[object]:
    """Each query's ``data.result``, computed from one remote-read request of their selectors
    (every query starts at or before ``end``: a later one is query_range's, which answers none)."""
    closed = lookback_closed(client)
    end_s = round(end.timestamp())
    plans = []
    for _index, query, start in batch:
        times = grid(round(start.timestamp()), end_s, step)
        # (first - lookback, end]: Prometheus 2 also counts a sample exactly one lookback old.
        first_ms = times[0] - LOOKBACK_MS - (1 if closed else 0)
        plans.append((query, times, first_ms, [client.scoped(s) for s in query.selectors]))
    try:
        request = read_request_of(
            [(matchers(s), first, times[-1]) for _q, times, first, scoped in plans for s in scoped],
            [SAMPLES],
        )
    except ValueError as exc:
        raise client._error(PrometheusError, str(exc)) from None
    name = " ".join(s for plan in plans for s in plan[3])[:200]
    answer: tuple[bytes, str] = client._guarded(lambda: client._post_read(request, name))  # type: ignore[assignment]
    body = answer[0]
    firsts = [times[0] for _q, times, _first, scoped in plans for _s in scoped]
    raw = _decoded(client, body, name, firsts)
    if len(raw) != len(firsts):
        raise client._error(PrometheusError, f"remote read answered {len(raw)} queries for {name}")
    answers: list[object] = []
    for query, times, _first_ms, scoped in plans:
        mine, raw = raw[: len(scoped)], raw[len(scoped) :]
        answers.append(step_answer(query, mine, times, LOOKBACK_MS, closed))
    return answers


def _decoded(
    client: PrometheusClient, body: bytes, name: str, firsts: list[int]
) -> list[list[KeptSeries]]:
    """The series of each query of a ``SAMPLES`` answer; over the size cap: ``AnswerTooLarge``."""
    try:
        size = cramjam.snappy.decompress_raw_len(body)
    except cramjam.DecompressionError:
        size = 0  # decode_tails says what is wrong with it
    if size > client.max_bytes:
        raise client._error(
            AnswerTooLarge,
            f"answer too large ({size} bytes decompressed; PROMETHEUS_MAX_ANSWER_BYTES="
            f"{client.max_bytes}) for {name}",
        )
    try:
        return decode_tails(body, client.max_bytes, firsts)
    except RemoteReadError as exc:
        raise client._error(
            PrometheusError, f"malformed remote-read answer ({exc}) for {name}"
        ) from None
