"""Prometheus' remote-read protocol: the request, and the two answers it can get.

``PrometheusClient.read_raw`` (``ingest.prometheus``) sends a ``ReadRequest`` (protobuf,
snappy block format) to ``POST /api/v1/read`` asking for ``STREAMED_XOR_CHUNKS`` first
and ``SAMPLES`` second, and decodes whichever the server answers:

* streamed chunks (Content-Type ``application/x-streamed-protobuf``): frames of
  uvarint size, CRC32-Castagnoli (big-endian) and one ``ChunkedReadResponse``; each
  chunk is decoded by ``ingest.xor_chunks`` and cut to the range asked for (the
  server sends whole chunks that overlap it);
* samples (``application/x-protobuf``, snappy): one ``ReadResponse``.

The message types are those of Prometheus' ``prompb/remote.proto`` and
``prompb/types.proto``, declared here with ``descriptor_pb2`` (no generated code to
keep in step; enums travel as their varint numbers). Every malformed answer (bad
protobuf, a bad checksum, a truncated frame or chunk, a length past the end, a
snappy length over the cap) raises ``RemoteReadError``; a chunk encoding other than
XOR (native histograms, newer encodings) raises ``UnsupportedChunk``.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import cramjam
import google_crc32c
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from .xor_chunks import STALE_NAN_BITS, ChunkError, decode_xor

#: ``ReadRequest.ResponseType``.
SAMPLES, STREAMED_XOR_CHUNKS = 0, 1
#: ``LabelMatcher.Type`` by PromQL operator.
MATCHER_TYPES = {"=": 0, "!=": 1, "=~": 2, "!~": 3}
#: ``Chunk.Encoding.XOR``.
XOR = 1
STREAMED_CONTENT_TYPE = "application/x-streamed-protobuf"
REQUEST_HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}
_STALE_NAN = struct.pack("Q", STALE_NAN_BITS)

Labels = dict[str, str]
RawSeries = tuple[Labels, list[tuple[float, float]]]


class RemoteReadError(ValueError):
    """A remote-read answer that is not what the protocol says."""


class UnsupportedChunk(RemoteReadError):
    """A chunk in an encoding this decoder does not read (not XOR)."""


_T = descriptor_pb2.FieldDescriptorProto
_MESSAGES: dict[str, list[tuple[str, int, int, str | None]]] = {
    # name: [(field, number, type, message type or None)]; every message field is repeated.
    # Query.hints (4) is not sent; fields not declared here are skipped when parsing.
    "Label": [("name", 1, _T.TYPE_STRING, None), ("value", 2, _T.TYPE_STRING, None)],
    "LabelMatcher": [
        ("type", 1, _T.TYPE_INT32, None),
        ("name", 2, _T.TYPE_STRING, None),
        ("value", 3, _T.TYPE_STRING, None),
    ],
    "Query": [
        ("start_timestamp_ms", 1, _T.TYPE_INT64, None),
        ("end_timestamp_ms", 2, _T.TYPE_INT64, None),
        ("matchers", 3, _T.TYPE_MESSAGE, "LabelMatcher"),
    ],
    "ReadRequest": [
        ("queries", 1, _T.TYPE_MESSAGE, "Query"),
        ("accepted_response_types", 2, _T.TYPE_INT32, None),
    ],
    "Sample": [("value", 1, _T.TYPE_DOUBLE, None), ("timestamp", 2, _T.TYPE_INT64, None)],
    "TimeSeries": [
        ("labels", 1, _T.TYPE_MESSAGE, "Label"),
        ("samples", 2, _T.TYPE_MESSAGE, "Sample"),
    ],
    "QueryResult": [("timeseries", 1, _T.TYPE_MESSAGE, "TimeSeries")],
    "ReadResponse": [("results", 1, _T.TYPE_MESSAGE, "QueryResult")],
    "Chunk": [
        ("min_time_ms", 1, _T.TYPE_INT64, None),
        ("max_time_ms", 2, _T.TYPE_INT64, None),
        ("type", 3, _T.TYPE_INT32, None),
        ("data", 4, _T.TYPE_BYTES, None),
    ],
    "ChunkedSeries": [
        ("labels", 1, _T.TYPE_MESSAGE, "Label"),
        ("chunks", 2, _T.TYPE_MESSAGE, "Chunk"),
    ],
    "ChunkedReadResponse": [
        ("chunked_series", 1, _T.TYPE_MESSAGE, "ChunkedSeries"),
        ("query_index", 2, _T.TYPE_INT64, None),
    ],
}
_REPEATED_SCALARS = {("ReadRequest", "accepted_response_types")}


def _message_classes() -> dict[str, Any]:
    """The prompb message classes, built in a pool of their own (no clash with other users)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="clusterwatch/prompb.proto", package="prometheus", syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        for field, number, kind, type_name in fields:
            repeated = type_name is not None or (name, field) in _REPEATED_SCALARS
            message.field.add(
                name=field,
                number=number,
                type=kind,
                type_name=f".prometheus.{type_name}" if type_name else None,
                label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL,
            )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"prometheus.{name}"))
        for name in _MESSAGES
    }


PROMPB = _message_classes()

# --- the request: a PromQL vector selector as label matchers -------------------

_SELECTOR = re.compile(r"\s*([A-Za-z_:][\w:]*)?\s*(?:\{(.*)\})?\s*", re.DOTALL)
_MATCHER = re.compile(
    r"""\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(,|$)""",
    re.DOTALL,
)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "xuU" and len(code) > 1:
        return chr(int(code[1:], 16))
    if len(code) == 3:
        return chr(int(code, 8))
    return _SIMPLE_ESCAPES.get(code, code)


def _unquote(literal: str) -> str:
    """A PromQL string literal's value (Go's escapes in "…" and '…'; none in `…`)."""
    body = literal[1:-1]
    return body if literal[0] == "`" else _ESCAPE.sub(_unescape, body)


def matchers(selector: str) -> list[tuple[int, str, str]]:
    """(type, label, value) of each matcher of a plain vector selector such as
    ``metric{job="x",gpu=~"1|2"}``; raises ``ValueError`` for anything else."""
    whole = _SELECTOR.fullmatch(selector)
    if whole is None or not (whole.group(1) or whole.group(2)):
        raise ValueError(f"not a plain vector selector: {selector[:200]!r}")
    found = [(MATCHER_TYPES["="], "__name__", whole.group(1))] if whole.group(1) else []
    body, pos = whole.group(2) or "", 0
    while body[pos:].strip():
        match = _MATCHER.match(body, pos)
        if match is None:
            raise ValueError(f"not a plain vector selector: {selector[:200]!r}")
        label, operator, literal = match.group(1), match.group(2), match.group(3)
        found.append((MATCHER_TYPES[operator], label, _unquote(literal)))
        pos = match.end()
    return found


def read_request(
    selector_matchers: list[tuple[int, str, str]],
    start_ms: int,
    end_ms: int,
    response_types: Iterable[int],
) -> bytes:
    """The snappy-compressed ``ReadRequest`` of one query over [start_ms, end_ms]."""
    request = PROMPB["ReadRequest"](accepted_response_types=list(response_types))
    query = request.queries.add(start_timestamp_ms=start_ms, end_timestamp_ms=end_ms)
    for kind, name, value in selector_matchers:
        query.matchers.add(type=kind, name=name, value=value)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


# --- the answers --------------------------------------------------------------


def decode_answer(
    body: bytes, content_type: str, start_ms: int, end_ms: int, max_bytes: int
) -> tuple[list[RawSeries], int]:
    """(series with their samples ``start_ms < t <= end_ms``, non-finite values dropped)."""
    if content_type.startswith(STREAMED_CONTENT_TYPE):
        return decode_streamed(body, start_ms, end_ms)
    return decode_samples(body, start_ms, end_ms, max_bytes)


def frames(body: bytes) -> Iterator[object]:
    """Each ``ChunkedReadResponse`` of a streamed answer, its checksum verified."""
    pos = 0
    parse = PROMPB["ChunkedReadResponse"].FromString
    while pos < len(body):
        size, pos = _frame_size(body, pos)
        if pos + 4 + size > len(body):
            raise RemoteReadError(f"truncated frame ({size} bytes announced at byte {pos})")
        expected = int.from_bytes(body[pos : pos + 4], "big")
        payload = body[pos + 4 : pos + 4 + size]
        if google_crc32c.value(payload) != expected:
            raise RemoteReadError(f"frame checksum mismatch at byte {pos}")
        try:
            yield parse(payload)
        except DecodeError as exc:
            raise RemoteReadError(f"bad protobuf frame at byte {pos}: {exc}") from None
        pos += 4 + size


def _frame_size(body: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for index in range(pos, min(pos + 10, len(body))):
        byte = body[index]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, index + 1
        shift += 7
    raise RemoteReadError(f"truncated or overlong frame size at byte {pos}")


def decode_streamed(body: bytes, start_ms: int, end_ms: int) -> tuple[list[RawSeries], int]:
    """Series and dropped count of a ``STREAMED_XOR_CHUNKS`` answer (one query)."""
    found: list[RawSeries] = []
    skipped = 0
    previous: Labels | None = None
    for frame in frames(body):
        for series in frame.chunked_series:  # type: ignore[attr-defined]
            samples: list[tuple[float, float]] = []
            for chunk in series.chunks:
                if chunk.max_time_ms <= start_ms or chunk.min_time_ms > end_ms:
                    continue
                in_chunk, dropped = _chunk_samples(chunk, start_ms, end_ms)
                skipped += dropped
                samples = _merged(samples, in_chunk) if samples else in_chunk
            labels = {label.name: label.value for label in series.labels}
            if labels == previous:  # a series split over frames: same labels, later chunks
                found[-1] = (labels, _merged(found[-1][1], samples))
            else:
                found.append((labels, samples))
            previous = labels
    return [entry for entry in found if entry[1]], skipped


def _chunk_samples(
    chunk: object, start_ms: int, end_ms: int
) -> tuple[list[tuple[float, float]], int]:
    """The samples in range of one chunk, and how many non-finite values were dropped."""
    if chunk.type != XOR:  # type: ignore[attr-defined]
        raise UnsupportedChunk(f"chunk encoding {chunk.type} (only XOR is read)")  # type: ignore[attr-defined]
    try:
        return decode_xor(chunk.data, start_ms, end_ms)  # type: ignore[attr-defined]
    except ChunkError as exc:
        raise RemoteReadError(str(exc)) from None


def _merged(
    earlier: list[tuple[float, float]], later: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Two runs of samples as one, in time order, each timestamp once (the later run wins)."""
    if not earlier:
        return later
    if not later or later[0][0] > earlier[-1][0]:
        return earlier + later
    return sorted({**dict(earlier), **dict(later)}.items())


def decode_samples(
    body: bytes, start_ms: int, end_ms: int, max_bytes: int
) -> tuple[list[RawSeries], int]:
    """Series and dropped count of a ``SAMPLES`` answer (snappy ``ReadResponse``)."""
    response = read_response(body, max_bytes)
    found: list[RawSeries] = []
    skipped = 0
    for result in response.results:  # type: ignore[attr-defined]
        for series in result.timeseries:
            kept: list[tuple[float, float]] = []
            for sample in series.samples:
                t, value = sample.timestamp, sample.value
                if start_ms < t <= end_ms:
                    if math.isfinite(value):
                        kept.append((t / 1000, value))
                    elif struct.pack("d", value) != _STALE_NAN:
                        skipped += 1
            if kept:
                found.append(({label.name: label.value for label in series.labels}, kept))
    return found, skipped


def read_response(body: bytes, max_bytes: int) -> object:
    """The ``ReadResponse`` of a ``SAMPLES`` answer (snappy), its size capped."""
    try:
        size = cramjam.snappy.decompress_raw_len(body)
        if size > max_bytes:
            raise RemoteReadError(f"snappy answer of {size} bytes over the cap of {max_bytes}")
        return PROMPB["ReadResponse"].FromString(bytes(cramjam.snappy.decompress_raw(body)))
    except (cramjam.DecompressionError, DecodeError) as exc:
        raise RemoteReadError(f"bad SAMPLES answer: {exc}") from None


KeptSamples = list[tuple[int, float | None]]
KeptSeries = tuple[list[tuple[str, str]], KeptSamples]


def decode_tails(body: bytes, max_bytes: int, firsts: Sequence[int]) -> list[list[KeptSeries]]:
    """Per query of a ``SAMPLES`` answer, its series (labels as sent, sorted by name) with
    their samples from the newest one at or before ``firsts[query]`` (ms) on, as sent: NaN
    and ±Inf kept, a staleness marker as None (``ingest.raw_steps`` needs them all). Older
    samples are not looked at: a range query's first step sees nothing before its newest."""
    response = read_response(body, max_bytes)
    answers = []
    for result, first in zip(response.results, firsts, strict=False):  # type: ignore[attr-defined]
        found = []
        for series in result.timeseries:
            samples = series.samples
            index = len(samples) - 1
            while index > 0 and samples[index].timestamp > first:
                index -= 1
            tail: KeptSamples = [
                (sample.timestamp, None if _is_stale(v := sample.value) else v)
                for sample in samples[max(index, 0) :]
            ]
            found.append(([(label.name, label.value) for label in series.labels], tail))
        answers.append(found)
    return answers


def _is_stale(value: float) -> bool:
    return value != value and struct.pack("d", value) == _STALE_NAN  # noqa: PLR0124 - NaN test


def read_request_of(
    queries: Iterable[tuple[list[tuple[int, str, str]], int, int]], response_types: Iterable[int]
) -> bytes:
    """The snappy-compressed ``ReadRequest`` of several queries ((matchers, start_ms, end_ms))."""
    request = PROMPB["ReadRequest"](accepted_response_types=list(response_types))
    for selector_matchers, start_ms, end_ms in queries:
        query = request.queries.add(start_timestamp_ms=start_ms, end_timestamp_ms=end_ms)
        for kind, name, value in selector_matchers:
            query.matchers.add(type=kind, name=name, value=value)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))
