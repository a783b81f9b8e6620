"""The only code that talks to Prometheus.

Wraps prometheus-api-client with what ingest needs: every call has a timeout,
``query_range`` is chunked to stay under Prometheus's 11,000-points-per-series
limit, and answers are decoded into ``Series`` with NaN/±Inf points dropped and
counted. A malformed answer raises ``PrometheusError`` (the caller records it).
At most PROMETHEUS_MAX_CONCURRENCY queries are in flight per process (a
semaphore shared by every client), so many shards on one worker cannot
overload a shared Thanos / Mimir / VictoriaMetrics.

At 4,096 nodes one cycle reads ~1M series, so the hot path is lean: queries
are POSTed through prometheus-api-client's session (its headers, auth, CA,
retries, timeout) and parsed with orjson; ``query_ranges`` keeps the next
query in flight while the caller folds this answer (``normalize.Collected``
folds the node-level families' answers without per-series objects). Answers
are asked for uncompressed: gzip was ~20 % of Prometheus's CPU per query
(``PROMETHEUS_HEADERS={"Accept-Encoding": "gzip"}`` brings it back for a slow link).

VictoriaMetrics (``PROMETHEUS_FLAVOR``, detected by default) gets ``nocache=1`` on
every query and label names from all time; any backend's ``status`` other than
success, or an ``isPartial`` answer (a VictoriaMetrics cluster missing a storage
node), is refused rather than stored. docs/scaling.md "VictoriaMetrics" has the rest.

``read_raw`` reads raw samples without PromQL evaluation: through remote read
(``ingest.remote_read``: protobuf, XOR chunks) or an instant query of a range selector,
per PROMETHEUS_READ_PATH (docs/scaling.md "Reading raw samples").
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import orjson
import requests
from django.conf import settings
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from core.secrets import redact_text, redact_url

from .flavor import (
    _FLAVORS,
    PROMETHEUS,
    REMOTE_READ,
    VICTORIAMETRICS,
    VICTORIAMETRICS_LABELS_START,
    VICTORIAMETRICS_QUERY_ARGS,
    flavor_of,
    read_path_for,
    refuse_remote_read,
    warn_if_short_lookback,
)
from .prometheus_io import DeadlineExceeded, TooLarge, error_message, prometheus_error, read_body
from .remote_read import (
    REQUEST_HEADERS,
    SAMPLES,
    STREAMED_XOR_CHUNKS,
    RemoteReadError,
    UnsupportedChunk,
    decode_answer,
    matchers,
    read_request,
)

log = logging.getLogger(__name__)

MAX_POINTS_PER_SERIES = 11_000
#: Stay well below the hard limit so a chunk never trips it on a boundary.
POINTS_PER_CHUNK = 10_000


class PrometheusError(Exception):
    """Prometheus could not be queried, or answered something we cannot decode."""


class PrometheusUnavailable(PrometheusError):
    """Connection refused / timed out / 5xx: an outage, to be caught up later."""


class AnswerTooLarge(PrometheusError):
    """An answer over PROMETHEUS_MAX_ANSWER_BYTES, abandoned unread (range queries split)."""


class RemoteReadUnsupported(PrometheusError):
    """The backend does not serve remote read (404/405/501), or sent chunks we cannot read."""


@dataclass
class Series:
    """One decoded series: its labels and (unix seconds, value) points, finite values only."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


@dataclass
class Answer:
    """Decoded series plus how many points were skipped (NaN, ±Inf, unparsable)."""

    series: list[Series] = field(default_factory=list)
    skipped: int = 0

    def extend(self, other: Answer) -> None:
        self.series.extend(other.series)
        self.skipped += other.skipped


def _decode_point(raw: object) -> tuple[float, float] | None:
    try:
        ts, value = raw  # type: ignore[misc]
        number = float(value)
        stamp = float(ts)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number) or not math.isfinite(stamp):
        return None
    return stamp, number


def decode(result: object, after: float | None = None) -> Answer:
    """Decode the ``data.result`` list of a matrix or vector answer (points after ``after`` only)."""
    if not isinstance(result, list):
        raise PrometheusError(f"unexpected answer: result is {type(result).__name__}, not a list")
    answer = Answer()
    for item in result:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
            answer.skipped += 1
            continue
        raw_points = item.get("values") if "values" in item else [item.get("value")]
        if not isinstance(raw_points, list):
            answer.skipped += 1
            continue
        if after is not None:
            raw_points = [p for p in raw_points if not _at_or_before(p, after)]
        points = [p for p in map(_decode_point, raw_points) if p is not None]
        answer.skipped += len(raw_points) - len(points)
        labels = {str(k): str(v) for k, v in item["metric"].items()}
        if points:
            answer.series.append(Series(labels, points))
    return answer


def _at_or_before(raw: object, moment: float) -> bool:
    """True for a well-formed point at or before ``moment`` (a malformed one is kept: counted)."""
    try:
        return float(raw[0]) <= moment  # type: ignore[index]
    except (TypeError, ValueError, IndexError, KeyError):
        return False


def chunks(
    start: datetime, end: datetime, step_seconds: float
) -> Iterator[tuple[datetime, datetime]]:
    """Split [start, end] so each piece has at most POINTS_PER_CHUNK points per series."""
    width = timedelta(seconds=step_seconds * (POINTS_PER_CHUNK - 1))
    cursor = start
    while cursor <= end:
        piece_end = min(cursor + width, end)
        yield cursor, piece_end
        cursor = piece_end + timedelta(seconds=step_seconds)


def _checked_data(body: object) -> object:
    """``data`` of a decoded answer; an error status or a partial answer raises."""
    if not isinstance(body, dict):
        raise PrometheusError("malformed answer (not an object)")
    if body.get("status") != "success":
        raise PrometheusError(f"status {body.get('status')!r} ({prometheus_error(body)})")
    if body.get("isPartial") is True:
        raise PrometheusUnavailable("partial answer (a storage node did not answer)")
    if "data" not in body:
        raise PrometheusError("malformed answer (no data)")
    return body["data"]


def _checked_result(body: object, url: str) -> object:
    """``data.result`` of a decoded answer (errors name ``url``, already shown without credentials)."""
    try:
        data = _checked_data(body)
    except PrometheusError as exc:
        raise type(exc)(f"{url}: {exc}") from None
    if not isinstance(data, dict) or "result" not in data:
        raise PrometheusError(f"{url}: malformed answer (no data.result)")
    return data["result"]


_LIMITS: dict[int, threading.BoundedSemaphore] = {}
_LIMITS_LOCK = threading.Lock()


def concurrency_limit() -> threading.BoundedSemaphore | None:
    """The process-wide semaphore for PROMETHEUS_MAX_CONCURRENCY (None: unlimited)."""
    size = settings.PROMETHEUS_MAX_CONCURRENCY
    if size <= 0:
        return None
    with _LIMITS_LOCK:
        return _LIMITS.setdefault(size, threading.BoundedSemaphore(size))


class PrometheusClient:
    """Queries through prometheus-api-client with a timeout on every call.

    Raises ``PrometheusUnavailable`` (connection error, timeout, 5xx, 429) or
    ``PrometheusError`` (4xx, non-JSON, malformed); never anything else.
    """

    def __init__(
        self, url: str | None = None, timeout: float | None = None, deadline: float | None = None
    ) -> None:
        self.url = (url or settings.PROMETHEUS_URL).rstrip("/")
        #: What messages name: the URL without credentials (they reach pages and last_error).
        self.shown_url = redact_url(self.url)
        self.timeout = timeout or settings.PROMETHEUS_TIMEOUT_SECONDS
        self.deadline = deadline or settings.PROMETHEUS_DEADLINE_SECONDS
        self.max_bytes = settings.PROMETHEUS_MAX_ANSWER_BYTES
        self.connection = PrometheusConnect(
            url=self.url,
            timeout=self.timeout,
            headers={"Accept-Encoding": "identity", **backend_headers()},
            auth=backend_basic_auth(),
            disable_ssl=False,
            retry=_retry(),
        )
        if settings.PROMETHEUS_CA_BUNDLE:
            # Thanos / Mimir / VictoriaMetrics behind a private CA.
            self.connection._session.verify = settings.PROMETHEUS_CA_BUNDLE

    def scoped(self, promql: str) -> str:
        """The PromQL actually sent (``ingest.shards.ScopedClient`` narrows it to a shard)."""
        return promql

    def flavor(self) -> str:
        """PROMETHEUS_FLAVOR, or (auto) what the backend's buildinfo says, once per process.

        A backend that cannot answer now is taken as Prometheus for this call, not cached.
        """
        forced = settings.PROMETHEUS_FLAVOR
        if forced != "auto":
            return forced
        if self.url not in _FLAVORS:
            try:
                data = self._guarded(lambda: self._get("status/buildinfo"))
            except PrometheusUnavailable:
                return PROMETHEUS
            except PrometheusError:
                data = None  # 404 and the like: not a VictoriaMetrics
            _FLAVORS[self.url] = flavor_of(data)
            if _FLAVORS[self.url] == VICTORIAMETRICS:
                self._check_lookback()
        return _FLAVORS[self.url]

    def _check_lookback(self) -> None:
        """Warn once when VictoriaMetrics drops vanished series sooner than Prometheus would."""
        try:
            session = self.connection._session
            response = session.get(
                f"{self.url}/flags",
                headers=self.connection.headers,
                auth=self.connection.auth,
                timeout=self.connection._timeout,
            )
        except requests.RequestException:
            return
        if response.status_code != 200:
            return  # behind -flagsAuthKey or a proxy: nothing to say
        warn_if_short_lookback(self.url, response.text)

    def _get(self, path: str) -> object:
        """``data`` of ``GET /api/v1/<path>`` (same session, headers, auth and timeout)."""
        connection = self.connection
        session = connection._session
        response = session.get(
            f"{connection.url}/api/v1/{path}",
            verify=session.verify,
            headers=connection.headers,
            auth=connection.auth,
            cert=session.cert,
            timeout=connection._timeout,
        )
        if response.status_code != 200:
            raise PrometheusApiClientException(f"HTTP Status Code {response.status_code}")
        body = orjson.loads(response.content)
        return body.get("data") if isinstance(body, dict) else None

    def backend_args(self) -> dict[str, str]:
        """Query args the flavour needs beside Prometheus' own (asked outside the semaphore)."""
        return dict(VICTORIAMETRICS_QUERY_ARGS) if self.flavor() == VICTORIAMETRICS else {}

    def _guarded(self, call: Callable[[], object]) -> object:
        limit = concurrency_limit()
        if limit is None:
            return self._call(call)
        with limit:
            return self._call(call)

    def _call(self, call: Callable[[], object]) -> object:
        try:
            return call()
        except PrometheusError:
            raise
        except (requests.exceptions.JSONDecodeError, orjson.JSONDecodeError) as exc:
            # A RequestException / ValueError, but a malformed answer rather than an outage.
            raise self._error(PrometheusError, f"malformed answer (not JSON: {exc})") from exc
        except requests.RequestException as exc:
            raise self._error(PrometheusUnavailable, f"{type(exc).__name__}: {exc}") from exc
        except PrometheusApiClientException as exc:
            status = _status_code(str(exc))
            kind = (
                PrometheusUnavailable
                if status is None or status >= 500 or status == 429
                else PrometheusError
            )
            raise self._error(kind, str(exc)[:600]) from exc
        except (ValueError, KeyError, TypeError) as exc:
            raise self._error(
                PrometheusError, f"malformed answer ({type(exc).__name__}: {exc})"
            ) from exc

    def _error(self, kind: type[PrometheusError], detail: str) -> PrometheusError:
        """An error naming the URL without credentials; the detail is scrubbed of any too."""
        message = f"{self.shown_url}: {redact_text(detail)}"
        log.warning("prometheus: %s", message)
        return kind(message)

    def _result(self, endpoint: str, form: dict[str, object]) -> object:
        """``data.result`` of ``POST /api/v1/<endpoint>``, parsed with orjson.

        Sent through prometheus-api-client's session with its headers, auth, CA
        bundle, retries and timeout, like its ``custom_query*``; but as a form
        body, so a shard's long node matcher never meets a proxy's URL limit
        (nor gets re-encoded character by character on every request).
        """
        return self._data(endpoint, form)["result"]  # type: ignore[index]

    def _data(self, endpoint: str, form: dict[str, object], method: str = "POST") -> object:
        """``data`` of one API answer, read within the deadline and the size cap."""
        connection = self.connection
        session = connection._session
        deadline = time.monotonic() + self.deadline
        with session.request(
            method=method,
            url=f"{connection.url}/api/v1/{endpoint}",
            data=form if method == "POST" else None,
            params=form if method == "GET" else None,
            verify=session.verify,
            headers=connection.headers,
            auth=connection.auth,
            cert=session.cert,
            timeout=connection._timeout,
            stream=True,
        ) as response:
            body = self._body(response, deadline, str(form.get("query", endpoint)))
        if response.status_code != 200:
            raise PrometheusApiClientException(
                f"HTTP Status Code {response.status_code} ({error_message(response.status_code, body)})"
            )
        try:
            return _checked_data(orjson.loads(body))
        except PrometheusError as exc:
            raise self._error(type(exc), str(exc)) from None

    def _body(self, response: requests.Response, deadline: float, query: str) -> bytes:
        """The answer's bytes within the deadline and the size cap (each error names the query)."""
        query = query[:200]
        try:
            return read_body(response, deadline, self.max_bytes)
        except DeadlineExceeded as exc:
            raise self._error(
                PrometheusUnavailable,
                f"deadline of {self.deadline:g} s exceeded ({exc}) for query {query}",
            ) from None
        except TooLarge as exc:
            raise self._error(
                AnswerTooLarge,
                f"answer too large ({exc}; PROMETHEUS_MAX_ANSWER_BYTES={self.max_bytes}) "
                f"for query {query}",
            ) from None

    def _range_forms(
        self, promql: str, start: datetime, end: datetime, step_seconds: float
    ) -> list[dict[str, object]]:
        """The form of each chunk of a range query (chunked under the points limit)."""
        query, extra = self.scoped(promql), self.backend_args()
        return [
            {
                "query": query,
                "start": round(piece_start.timestamp()),
                "end": round(piece_end.timestamp()),
                "step": f"{step_seconds:g}",
                **extra,
            }
            for piece_start, piece_end in chunks(start, end, step_seconds)
        ]

    def _range_results(
        self, promql: str, start: datetime, end: datetime, step_seconds: float
    ) -> Iterator[object]:
        """The ``data.result`` of each chunk of a range query."""
        for form in self._range_forms(promql, start, end, step_seconds):
            yield from self._split_results(form, step_seconds)

    def _split_results(self, form: dict[str, object], step_seconds: float) -> Iterator[object]:
        """One chunk's ``data.result``; an answer too large is fetched again as two halves.

        The halves meet on the step grid, so the concatenated series are those of the whole
        window; a single step that is still too large raises ``AnswerTooLarge``.
        """
        try:
            yield self._guarded(lambda: self._result("query_range", form))
            return
        except AnswerTooLarge:
            halves = split_form(form, step_seconds)
            if halves is None:
                raise
        for half in halves:
            yield from self._split_results(half, step_seconds)

    def query(self, promql: str, at: datetime | None = None) -> Answer:
        """Instant query."""
        params: dict[str, object] = {"query": self.scoped(promql), **self.backend_args()}
        if at is not None:
            params["time"] = f"{at.timestamp():.3f}"
        return decode(self._guarded(lambda: self._result("query", params)))

    def query_range(
        self, promql: str, start: datetime, end: datetime, step_seconds: float
    ) -> Answer:
        """Range query, chunked under the 11,000-points limit; series of all chunks concatenated."""
        answer = Answer()
        for result in self._range_results(promql, start, end, step_seconds):
            answer.extend(decode(result))
        return answer

    def query_range_lenient(
        self, promql: str, start: datetime, end: datetime, step_seconds: float
    ) -> Answer:
        """``query_range`` where a malformed answer counts as one skipped item instead of raising.

        ``PrometheusUnavailable`` still raises: an outage stops the cycle and is caught up later.
        """
        try:
            return self.query_range(promql, start, end, step_seconds)
        except PrometheusUnavailable:
            raise
        except PrometheusError:
            return Answer(skipped=1)

    def query_ranges(
        self, queries: Sequence[tuple[str, datetime]], end: datetime, step_seconds: float
    ) -> Iterator[tuple[int, object]]:
        """(index, ``data.result``) of each chunk of the range queries ``(promql, start)`` up to
        ``end``, in order; a malformed answer comes as its ``PrometheusError`` instead.

        One request at a time, fetched as the caller asks for it: a prefetching
        thread was slower at 4,096 nodes (it fights the decoding thread for the GIL
        on every socket read). ``PrometheusUnavailable`` raises.
        """
        for index, (promql, start) in enumerate(queries):
            for form in self._range_forms(promql, start, end, step_seconds):
                try:
                    results = list(self._split_results(form, step_seconds))
                except PrometheusUnavailable:
                    raise
                except PrometheusError as exc:
                    results = [exc]
                for result in results:
                    yield index, result

    #: What remote read asks for, in order of preference (a server answers the first it has);
    #: None: by the window (``remote_read_types_for``).
    remote_read_types: tuple[int, ...] | None = None

    def read_path(self) -> str:
        """How ``read_raw`` reads now: PROMETHEUS_READ_PATH, or (auto) by flavour and past refusals."""
        setting = settings.PROMETHEUS_READ_PATH
        return setting if setting != "auto" else read_path_for(self.flavor(), self.url)

    def read_raw(self, selector: str, start: datetime, end: datetime) -> Answer:
        """The raw samples ``start < ts <= end`` of every series of a plain vector selector
        (``metric{label="v"}``, scoped like every query), finite values only, skipped counted.

        Remote read or a range selector (``read_path``); under auto a remote read answered
        404/405/501 (or with chunks we cannot decode) switches this backend to range selectors
        for the rest of the process. An answer too large is read again as two half windows
        (down to one second).
        """
        start_ms, end_ms = round(start.timestamp() * 1000), round(end.timestamp() * 1000)
        if self.read_path() == REMOTE_READ:
            try:
                return self._read_halves(self._remote_read, selector, start_ms, end_ms)
            except RemoteReadUnsupported as exc:
                if settings.PROMETHEUS_READ_PATH != "auto":
                    raise
                refuse_remote_read(self.url)
                log.warning("prometheus: %s; reading through range selectors from now on", exc)
        return self._read_halves(self._range_selector_read, selector, start_ms, end_ms)

    def _read_halves(
        self, read: Callable[[str, int, int], Answer], selector: str, start_ms: int, end_ms: int
    ) -> Answer:
        """``read`` over (start_ms, end_ms]; too large an answer is read as two halves, joined."""
        if end_ms <= start_ms:
            return Answer()
        try:
            return read(selector, start_ms, end_ms)
        except AnswerTooLarge:
            if end_ms - start_ms <= 1000:  # no finer than a second: scrapes are seconds apart
                raise
        middle = (start_ms + end_ms) // 2
        return joined(
            self._read_halves(read, selector, start_ms, middle),
            self._read_halves(read, selector, middle, end_ms),
        )

    def _remote_read(self, selector: str, start_ms: int, end_ms: int) -> Answer:
        """``POST /api/v1/read`` of one selector, decoded (``ingest.remote_read``)."""
        query = self.scoped(selector)
        try:
            types = self.remote_read_types or remote_read_types_for(end_ms - start_ms)
            request = read_request(matchers(query), start_ms, end_ms, types)
        except ValueError as exc:
            raise self._error(PrometheusError, str(exc)) from None
        body, content_type = self._guarded(lambda: self._post_read(request, query))  # type: ignore[misc]
        try:
            found, skipped = decode_answer(body, content_type, start_ms, end_ms, self.max_bytes)
        except UnsupportedChunk as exc:
            raise self._error(RemoteReadUnsupported, f"{exc} for {query[:200]}") from None
        except RemoteReadError as exc:
            raise self._error(
                PrometheusError, f"malformed remote-read answer ({exc}) for {query[:200]}"
            ) from None
        return Answer([Series(labels, points) for labels, points in found], skipped)

    def _post_read(self, request: bytes, query: str) -> tuple[bytes, str]:
        """(body, Content-Type) of one remote-read request, within the deadline and the size cap."""
        connection = self.connection
        session = connection._session
        deadline = time.monotonic() + self.deadline
        with session.post(
            f"{connection.url}/api/v1/read",
            data=request,
            headers={**connection.headers, **REQUEST_HEADERS},
            verify=session.verify,
            auth=connection.auth,
            cert=session.cert,
            timeout=connection._timeout,
            stream=True,
        ) as response:
            body = self._body(response, deadline, query)
        status = response.status_code
        # VictoriaMetrics (behind a proxy that hides its flavour) answers 400 "unsupported path".
        if status in (404, 405, 501) or (status == 400 and b"unsupported path" in body[:500]):
            raise self._error(RemoteReadUnsupported, f"remote read not served (HTTP {status})")
        if status != 200:
            raise PrometheusApiClientException(
                f"HTTP Status Code {status} ({error_message(status, body)})"
            )
        return body, response.headers.get("Content-Type", "")

    def _range_selector_read(self, selector: str, start_ms: int, end_ms: int) -> Answer:
        """An instant query of ``selector[range]`` at the end; points after the start only
        (Prometheus 2 includes a sample at the very start of the range, 3 does not)."""
        params = {
            "query": f"{self.scoped(selector)}[{end_ms - start_ms}ms]",
            "time": f"{end_ms / 1000:.3f}",
            **self.backend_args(),
        }
        result = self._guarded(lambda: self._result("query", params))
        return decode(result, after=start_ms / 1000)

    def metric_names(self) -> set[str]:
        """Every metric name Prometheus knows (for dialect detection and coverage)."""
        params = {"start": VICTORIAMETRICS_LABELS_START} if self.flavor() == VICTORIAMETRICS else {}
        names = self._guarded(lambda: self._data("label/__name__/values", params, method="GET"))
        if not isinstance(names, list):
            raise self._error(PrometheusError, "malformed answer (label values are not a list)")
        return {str(name) for name in names}

    def known_metrics(self) -> set[str]:
        """``metric_names`` fetched once per client (a client lives for one cycle)."""
        cached = getattr(self, "_known_metrics", None)
        if cached is None:
            cached = self._known_metrics = self.metric_names()
        return cached

    def detect_dialect(self, markers: dict[str, str], forced: str = "auto") -> str:
        """The first dialect whose marker metric Prometheus has (``forced`` unless "auto")."""
        if forced != "auto":
            return forced
        known = self.known_metrics()
        for dialect, metric in markers.items():
            if metric in known:
                return dialect
        return next(iter(markers))


#: Windows at least this long ask for XOR chunks first: the server sends whole chunks (120
#: samples, an hour at a 30 s scrape), so for a short window most of what it sends and we
#: decode lies outside it; shorter windows ask for SAMPLES first (bench/RESULTS.md "bench_reads").
CHUNKS_FROM_MS = 3_600_000


def remote_read_types_for(window_ms: int) -> tuple[int, ...]:
    """The response types a remote read of a window this long asks for, preferred first."""
    if window_ms >= CHUNKS_FROM_MS:
        return (STREAMED_XOR_CHUNKS, SAMPLES)
    return (SAMPLES, STREAMED_XOR_CHUNKS)


def joined(first: Answer, second: Answer) -> Answer:
    """Two answers of consecutive windows as one: each series once, its points in order."""
    by_labels = {
        tuple(sorted(s.labels.items())): Series(s.labels, list(s.points)) for s in first.series
    }
    for series in second.series:
        key = tuple(sorted(series.labels.items()))
        if key in by_labels:
            by_labels[key].points.extend(series.points)
        else:
            by_labels[key] = series
    return Answer(list(by_labels.values()), first.skipped + second.skipped)


def backend_headers() -> dict[str, str]:
    """Extra headers for Prometheus-compatible backends: bearer token, X-Scope-OrgID, ..."""
    headers = dict(settings.PROMETHEUS_HEADERS)
    if settings.PROMETHEUS_BEARER_TOKEN:
        headers["Authorization"] = f"Bearer {settings.PROMETHEUS_BEARER_TOKEN}"
    return headers


def backend_basic_auth() -> tuple[str, str] | None:
    """(user, password) from PROMETHEUS_BASIC_AUTH="user:password", if set."""
    user, sep, password = settings.PROMETHEUS_BASIC_AUTH.partition(":")
    return (user, password) if sep else None


def _retry() -> Retry:
    """prometheus-api-client's retries, less re-reading after a read timeout.

    A hung Prometheus would otherwise cost four timeouts plus backoff per request, past
    any deadline; a read timeout is an outage, caught up by the next cycle.
    """
    return Retry(total=3, read=0, backoff_factor=1, status_forcelist=[408, 429, 500, 502, 503, 504])


def split_form(form: dict[str, object], step_seconds: float) -> list[dict[str, object]] | None:
    """A range form cut in two on the step grid ([start, mid], [mid + step, end]); None: one step."""
    start, end = int(form["start"]), int(form["end"])  # type: ignore[call-overload]
    steps = int((end - start) // step_seconds)
    if steps < 1:
        return None
    middle = start + int(steps // 2 * step_seconds)
    return [
        {**form, "end": middle},
        {**form, "start": middle + round(step_seconds)},
    ]


def _status_code(message: str) -> int | None:
    match = re.search(r"HTTP Status Code (\d+)", message)
    return int(match.group(1)) if match else None
