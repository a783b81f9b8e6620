"""A remote-write 1.0 ``WriteRequest`` read straight from its protobuf wire bytes.

The push receiver decodes every forwarded series every scrape (~87,000 per 30 s at 512
nodes, ~700,000 at 4,096). The generated protobuf classes spend most of that time building
a Python object per label; but a series' labels are the same bytes every time it is sent,
so here the bytes of its label fields are the key of a cache that hands back the same
``pairs`` tuple (which is also the store's key for the series: its lookup then compares by
identity). Only the samples are read each time.

Wire format (prometheus/prompb/types.proto, remote.proto; protobuf encoding rules):
``WriteRequest`` field 1 ``timeseries`` (field 3 ``metadata`` skipped); ``TimeSeries`` field
1 ``labels`` (``Label``: 1 ``name``, 2 ``value``, strings), 2 ``samples`` (``Sample``: 1
``value`` double, fixed 64-bit; 2 ``timestamp`` int64 varint, two's complement when
negative), 3 ``exemplars`` and 4 ``histograms`` skipped. proto3 omits fields at their
default (a 0.0 value, a 0 timestamp, an empty label value). Prometheus writes a series'
labels before its samples; a series whose label fields are not contiguous raises
``Irregular`` and the caller decodes that body with the generated classes instead.
"""

from __future__ import annotations

import struct

from .xor_chunks import STALE_NAN_BITS

Pairs = tuple[tuple[str, str], ...]
Samples = list[tuple[int, float | None]]

_DOUBLE = struct.Struct("<d")
#: Prometheus' staleness marker (value.StaleNaN), little-endian: ``xor_chunks``' constant.
STALE_BYTES = struct.pack("<Q", STALE_NAN_BITS)
_MAX_CACHED = 4_000_000  # label sets remembered before the cache starts over


class Cache:
    """What repeats between requests, kept by the caller so repeats share one object:
    ``series`` (label field bytes -> pairs), ``pairs`` (one label's bytes -> (name, value):
    a GPU's Hostname/gpu/UUID labels recur in each of its 20-odd metrics) and ``stamps``
    (every series of a scrape has the same timestamp: one int, not one per sample)."""

    def __init__(self) -> None:
        self.series: dict[bytes, Pairs] = {}
        self.pairs: dict[bytes, tuple[str, str]] = {}
        self.stamps: dict[int, int] = {}

    def trim(self) -> None:
        """Start over where a dict outgrew its bound (a churn of series or timestamps)."""
        if len(self.series) > _MAX_CACHED or len(self.pairs) > _MAX_CACHED:
            self.series.clear()
            self.pairs.clear()
        if len(self.stamps) > 100_000:
            self.stamps.clear()


class Irregular(ValueError):
    """Not the canonical layout (or not a WriteRequest at all): decode it another way."""


#: What ``decode`` raises on bytes it cannot read (truncated, not UTF-8, not canonical).
MALFORMED = (Irregular, IndexError, UnicodeDecodeError, struct.error)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]  # IndexError past the end: truncated
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise Irregular("varint over 64 bits")


def _skip(data: bytes, pos: int, wire: int) -> int:
    """Past one field's value of wire type ``wire``."""
    if wire == 0:
        return _varint(data, pos)[1]
    if wire == 1:
        return pos + 8
    if wire == 2:
        length, pos = _varint(data, pos)
        return pos + length
    if wire == 5:
        return pos + 4
    raise Irregular(f"wire type {wire}")


def _labels(data: bytes, pos: int, end: int, known: dict[bytes, tuple[str, str]]) -> Pairs:
    """The (name, value) pairs of the ``Label`` fields in ``data[pos:end]`` (``known``: by bytes)."""
    pairs = []
    while pos < end:
        length, start = _varint(data, pos + 1)  # the tag: 0x0A, checked by the caller
        stop = start + length
        field = data[pos:stop]
        pair = known.get(field)
        if pair is not None:
            pairs.append(pair)
            pos = stop
            continue
        pos = start
        name = value = ""
        while pos < stop:
            tag, pos = _varint(data, pos)
            if tag in (0x0A, 0x12):
                size, pos = _varint(data, pos)
                text = data[pos : pos + size].decode()  # UnicodeDecodeError: not UTF-8
                pos += size
                if tag == 0x0A:
                    name = text
                else:
                    value = text
            else:
                pos = _skip(data, pos, tag & 7)
        if pos != stop:
            raise Irregular("label overruns its length")
        pair = known[field] = (name, value)
        pairs.append(pair)
    return tuple(pairs)


def _sample(data: bytes, pos: int, stop: int, stamps: dict[int, int]) -> tuple[int, float | None]:
    """(timestamp ms, value; None for a staleness marker) of the ``Sample`` in ``data[pos:stop]``."""
    value: float | None = 0.0
    timestamp = 0
    while pos < stop:
        tag = data[pos]
        if tag == 0x09:
            raw = data[pos + 1 : pos + 9]
            value = None if raw == STALE_BYTES else _DOUBLE.unpack(raw)[0]
            pos += 9
        elif tag == 0x10:
            timestamp = shift = 0
            pos += 1
            while True:  # _varint, inlined: every sample has one
                byte = data[pos]
                pos += 1
                timestamp |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise Irregular("varint over 64 bits")
            if timestamp >= 1 << 63:
                timestamp -= 1 << 64
            timestamp = stamps.setdefault(timestamp, timestamp)
        else:
            tag, pos = _varint(data, pos)
            pos = _skip(data, pos, tag & 7)
    if pos != stop:
        raise Irregular("sample overruns its length")
    return timestamp, value


def decode(data: bytes, cache: Cache) -> list[tuple[Pairs, Samples]]:
    """(labels as sent, [(ms, value or None)]) of each series of an uncompressed WriteRequest.

    Raises one of ``MALFORMED`` on anything else: the caller then decodes the body with the
    generated classes, which either read it or give the error message."""
    cache.trim()
    out = []
    pos, end = 0, len(data)
    while pos < end:
        if data[pos] != 0x0A:  # not a series (WriteRequest.metadata, an unknown field)
            tag, pos = _varint(data, pos)
            pos = _skip(data, pos, tag & 7)
            continue
        length, pos = _varint(data, pos + 1)
        stop = pos + length
        if stop > end:
            raise Irregular("series overruns the body")
        out.append(_series(data, pos, stop, cache))
        pos = stop
    if pos != end:
        raise Irregular("body overruns its length")
    return out


def _series(data: bytes, pos: int, stop: int, cache: Cache) -> tuple[Pairs, Samples]:
    """One ``TimeSeries`` in ``data[pos:stop]``: its labels (cached by their bytes), samples."""
    first = pos
    while pos < stop and data[pos] == 0x0A:  # the label fields, contiguous
        size = data[pos + 1]
        if size < 0x80:
            pos += 2 + size
        else:
            size, pos = _varint(data, pos + 1)
            pos += size
    key = data[first:pos]
    pairs = cache.series.get(key)
    if pairs is None:
        pairs = cache.series[key] = _labels(data, first, pos, cache.pairs)
    stamps = cache.stamps
    samples = []
    while pos < stop:
        if data[pos] == 0x12 and data[pos + 1] < 0x80:  # a sample under 128 bytes: always
            size = data[pos + 1]
            samples.append(_sample(data, pos + 2, pos + 2 + size, stamps))
            pos += 2 + size
            continue
        tag, pos = _varint(data, pos)
        if tag == 0x12:
            size, pos = _varint(data, pos)
            samples.append(_sample(data, pos, pos + size, stamps))
            pos += size
        elif tag == 0x0A:
            raise Irregular("a label after the samples")
        else:
            pos = _skip(data, pos, tag & 7)
    if pos != stop:
        raise Irregular("series overruns its length")
    return pairs, samples
