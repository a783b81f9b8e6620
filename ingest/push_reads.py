"""Ingest's side of push mode: the GPU and IB step queries answered by ``manage.py push_receiver``.

With INGEST_PUSH_URL set, ``step_reads.read_steps`` sends every query that
``raw_steps.step_query`` parses to the receiver in one request; each answer carries the
covered steps' ``data.result`` and the runs of steps the receiver could not answer exactly
(``ingest.push_store``), which are read from Prometheus through the usual path and merged in.
Queries of other shapes, and every query when the receiver cannot be asked (down, slow,
malformed answer), go to Prometheus as before: push mode only ever saves reads.

Several receivers (INGEST_PUSH_URL a comma-separated list; docs/push.md "Several
receivers"): each holds one hashmod shard of the series and says which (``shard``: [I, N]).
Every request goes to all of them at once; unless their shards are exactly 0..N-1 of one N
their answers are not used. A step uncovered by any receiver is read from Prometheus for
the whole query; the covered steps' series are merged by labels, ``max`` per step (what
``max by`` over the union gives: the shard label is in every series' identity, so an
``or`` never pairs series of two receivers).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import orjson
import requests
from django.conf import settings

from core.secrets import redact_url

from .prometheus import PrometheusClient
from .prometheus_io import DeadlineExceeded, TooLarge, read_body
from .raw_steps import StepQuery, step_query
from .remote_read import matchers

log = logging.getLogger(__name__)
#: Reads (query, start) pairs up to a time from Prometheus; indexes counted from ``offset``.
Pull = Callable[[Sequence[tuple[str, datetime]], datetime, int], Iterator[tuple[int, object]]]
#: What this process asked the receiver and what it answered (steps); read by tests and benches
#: (the receiver's own /metrics counts the same per receiver).
STATS = {"requests": 0, "failures": 0, "pushed_steps": 0, "pulled_runs": 0}


class PushUnavailable(Exception):
    """The receiver gave no usable answer."""


class PushTooLarge(PushUnavailable):
    """The answer was over PROMETHEUS_MAX_ANSWER_BYTES: ask fewer queries at once."""


#: Queries per steps request, learnt per process: halved whenever an answer is over the cap
#: (at 4,096 nodes one request for a whole cycle answers ~108 MB; one query, ~3 MB).
BATCH = {"queries": 64}


def enabled() -> bool:
    return bool(settings.INGEST_PUSH_URL)


def receivers() -> list[str]:
    """The receivers' base URLs (INGEST_PUSH_URL: one, or several separated by commas)."""
    return [url.strip().rstrip("/") for url in settings.INGEST_PUSH_URL.split(",") if url.strip()]


def read_pushed(
    client: PrometheusClient,
    queries: Sequence[tuple[str, datetime]],
    end: datetime,
    step: float,
    closed: bool,
    pull: Pull,
) -> Iterator[tuple[int, object]]:
    """(index, ``data.result``) of each query, from the receiver where it can, in order."""
    asked: list[tuple[int, StepQuery, list[str], datetime]] = []
    for index, (promql, start) in enumerate(queries):
        parsed = step_query(promql) if start <= end else None
        if parsed is not None:
            asked.append((index, parsed, [client.scoped(s) for s in parsed.selectors], start))
    answers = _ask_in_batches(asked, end, step, closed) if asked else {}
    for index, (promql, start) in enumerate(queries):
        answer = answers.get(index)
        if answer is None:
            yield from pull([(promql, start)], end, index)
            continue
        result = answer["result"]
        for first_ms, last_ms in answer["uncovered"]:
            STATS["pulled_runs"] += 1
            first, last = (datetime.fromtimestamp(ms / 1000, UTC) for ms in (first_ms, last_ms))
            for _index, part in pull([(promql, first)], last, 0):
                if isinstance(part, Exception):
                    result = part
                    break
                result = merged(result, part)  # type: ignore[arg-type]
            if isinstance(result, Exception):
                break
        yield index, result


def _ask_in_batches(
    asked: list[tuple[int, StepQuery, list[str], datetime]],
    end: datetime,
    step: float,
    closed: bool,
) -> dict[int, dict]:
    """index -> answer of every query the receiver answered; the rest are read from
    Prometheus. An answer over the cap is asked again in halves (``BATCH`` remembers the
    size); one query over it alone, and every query after any other failure, is not asked."""
    answers: dict[int, dict] = {}
    pending = list(asked)
    while pending:
        size = max(1, BATCH["queries"])
        chunk, rest = pending[:size], pending[size:]
        try:
            got = _ask(chunk, end, step, closed)
        except PushTooLarge as exc:
            if len(chunk) > 1:
                BATCH["queries"] = len(chunk) // 2
                continue
            STATS["failures"] += 1
            log.warning("push: %s; reading this query from Prometheus", exc)
            pending = rest
            continue
        except PushUnavailable as exc:
            STATS["failures"] += 1
            log.warning("push: %s; reading these steps from Prometheus", exc)
            break
        answers.update(zip((a[0] for a in chunk), got, strict=True))
        pending = rest
    return answers


def _ask(
    asked: list[tuple[int, StepQuery, list[str], datetime]],
    end: datetime,
    step: float,
    closed: bool,
) -> list[dict]:
    """Each query's answer: one receiver's, or all receivers' merged (``combined``)."""
    body = _payload(asked, end, step, closed)
    urls = receivers()
    if len(urls) == 1:
        shard, answers = _ask_one(urls[0], body, len(asked))
        if shard not in (None, (0, 1)):
            raise PushUnavailable(f"{redact_url(urls[0])}: answers shard {shard}, expected all")
    else:
        with ThreadPoolExecutor(len(urls), thread_name_prefix="push-read") as pool:
            got = list(pool.map(lambda url: _ask_one(url, body, len(asked)), urls))
        _check_shards([shard for shard, _ in got], urls)
        step_ms = round(step * 1000)
        answers = [combined([one[i] for _, one in got], step_ms) for i in range(len(asked))]
    STATS["pushed_steps"] += sum(len(item["values"]) for a in answers for item in a["result"])
    return answers


def _check_shards(shards: list[tuple[int, int] | None], urls: list[str]) -> None:
    counts = {shard[1] for shard in shards if shard is not None}
    expected = [(i, len(urls)) for i in range(len(urls))]
    if None in shards or counts != {len(urls)} or sorted(shards) != expected:  # type: ignore[type-var]
        said = ", ".join(
            f"{redact_url(url)}: {'unsharded' if s is None else f'{s[0]}/{s[1]}'}"
            for url, s in zip(urls, shards, strict=True)
        )
        raise PushUnavailable(f"receivers answer shards {said}; expected 0/{len(urls)} to "
                              f"{len(urls) - 1}/{len(urls)}, each once")  # fmt: skip


def _payload(
    asked: list[tuple[int, StepQuery, list[str], datetime]],
    end: datetime,
    step: float,
    closed: bool,
) -> bytes:
    payload = {
        "step": step,
        "end": round(end.timestamp()),
        "closed": closed,
        "queries": [
            {
                "start": round(start.timestamp()),
                "by": list(query.by),
                "selectors": [matchers(s) for s in scoped],
                "timestamps": query.timestamps,
            }
            for _index, query, scoped, start in asked
        ],
    }
    return orjson.dumps(payload)


def _ask_one(base: str, body: bytes, count: int) -> tuple[tuple[int, int] | None, list[dict]]:
    """(the receiver's shard, its answer to each of ``count`` queries)."""
    url = f"{base}/api/v1/steps"
    deadline = time.monotonic() + settings.PROMETHEUS_DEADLINE_SECONDS
    STATS["requests"] += 1
    try:
        with requests.post(
            url,
            data=body,
            headers={
                "Authorization": f"Bearer {settings.INGEST_PUSH_TOKEN}",
                "Content-Type": "application/json",
            },
            timeout=settings.PROMETHEUS_TIMEOUT_SECONDS,
            stream=True,
        ) as response:
            body = read_body(response, deadline, settings.PROMETHEUS_MAX_ANSWER_BYTES)
            status = response.status_code
    except TooLarge as exc:
        raise PushTooLarge(f"{redact_url(url)}: {exc}") from None
    except (requests.RequestException, DeadlineExceeded, OSError) as exc:
        raise PushUnavailable(
            f"{redact_url(url)}: {type(exc).__name__}: {str(exc)[:200]}"
        ) from None
    if status != 200:
        raise PushUnavailable(f"{redact_url(url)}: HTTP {status}: {body[:200]!r}")
    try:
        decoded = orjson.loads(body)
        answers = decoded["answers"]
        checked = [
            (list(a["result"]), [(int(x), int(y)) for x, y in a["uncovered"]]) for a in answers
        ]
        said = decoded.get("shard")
        shard = None if said is None else (int(said[0]), int(said[1]))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise PushUnavailable(f"{redact_url(url)}: malformed answer ({exc})") from None
    if len(checked) != count:
        raise PushUnavailable(f"{redact_url(url)}: {len(checked)} answers for {count} queries")
    return shard, [{"result": result, "uncovered": runs} for result, runs in checked]


def combined(answers: Sequence[dict], step_ms: int) -> dict:
    """One query's answers from every shard's receiver as one: steps uncovered by any of them
    are uncovered (read from Prometheus for every series), the others' values merged by the
    series' labels, the largest per step (a NaN giving way to any number, as ``max`` does);
    series in label order, values in time order."""
    gone = sorted({run for answer in answers for run in answer["uncovered"]})
    runs: list[tuple[int, int]] = []
    for first, last in gone:
        if runs and first <= runs[-1][1] + step_ms:
            runs[-1] = (runs[-1][0], max(runs[-1][1], last))
        else:
            runs.append((first, last))
    # Keyed by the labels in the receivers' own order (every receiver writes a query's group
    # labels in its ``by`` order); sorted by name only once, for the result's order.
    by_key: dict[tuple, dict] = {}
    merged_values: dict[tuple, dict] = {}  # the keys answered by more than one receiver
    for answer in answers:
        for item in answer["result"]:
            key = tuple(item["metric"].items())
            values = item["values"]
            if runs:
                values = [p for p in values if not _within(round(float(p[0]) * 1000), runs)]
            held = by_key.get(key)
            if held is None:  # the usual case: a series' group is in one shard only
                by_key[key] = {"metric": item["metric"], "values": values}
                continue
            at = merged_values.get(key)
            if at is None:
                at = merged_values[key] = {ts: v for ts, v in held["values"]}
            for ts, value in values:
                old = at.get(ts)
                if old is None or _larger(value, old):
                    at[ts] = value
    for key, at in merged_values.items():
        by_key[key]["values"] = [[ts, at[ts]] for ts in sorted(at, key=float)]
    result = [item for item in by_key.values() if item["values"]]
    result.sort(key=lambda item: sorted(item["metric"].items()))
    return {"result": result, "uncovered": runs}


def _within(ms: int, runs: list[tuple[int, int]]) -> bool:
    return any(first <= ms <= last for first, last in runs)


def _larger(value: object, old: object) -> bool:
    new, held = float(value), float(old)  # type: ignore[arg-type]
    return math.isnan(held) and not math.isnan(new) or new > held


def merged(pushed: list[dict], pulled: list[dict]) -> list[dict]:
    """Two ``data.result`` lists of one query over disjoint steps, as one: values in time
    order, series in label order (a range query's, so rows are written in the same order)."""
    by_key: dict[tuple, dict] = {}
    for item in (*pushed, *pulled):
        key = tuple(sorted(item["metric"].items()))
        held = by_key.get(key)
        if held is None:
            by_key[key] = {"metric": item["metric"], "values": list(item["values"])}
        else:
            held["values"].extend(item["values"])
    for held in by_key.values():
        held["values"].sort(key=lambda point: float(point[0]))
    return [by_key[key] for key in sorted(by_key)]  # Prometheus' order: by labels
