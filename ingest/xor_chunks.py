"""Decoding Prometheus' XOR chunks (the samples of a remote-read ``STREAMED_XOR_CHUNKS`` answer).

No maintained Python library decodes this format (PyPI has Gorilla codecs with the
paper's bit layout, not Prometheus'), so it is written here, after Prometheus'
``tsdb/chunkenc/xor.go`` (docs/scaling.md "Remote read" cites the commit):

* 2 bytes: the number of samples (big-endian);
* sample 0: timestamp (ms) as a signed varint, value as 64 raw bits;
* sample 1: timestamp delta as an unsigned varint, value XOR-encoded;
* then, bit-packed: delta-of-delta of the timestamp (``0`` | ``10``+14 bits |
  ``110``+17 | ``1110``+20 | ``1111``+64), value XOR-encoded (``0``: same value;
  ``10``: XOR bits within the previous leading/trailing zeros; ``11``: 5 bits of
  leading zeros, 6 bits of significant bits (0 means 64), then those bits).

The bit stream is read as a string of ``0``/``1`` characters: one C call to make it,
then each control bit is a string index and each field one ``int(…, 2)`` on a short
slice, the cheapest bit reading pure Python has. Values stay as their 64-bit
patterns until a sample in range is kept. Decoding stops
at the first sample after ``end_ms`` (samples are in time order). Staleness markers
(the NaN Prometheus writes when a series vanishes) are dropped silently, as the PromQL
engine drops them; any other NaN or ±Inf is dropped and counted, as ``decode()`` does.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

#: Prometheus' staleness marker (``value.StaleNaN``, model/value/value.go).
STALE_NAN_BITS = 0x7FF0000000000002
_EXPONENT = 0x7FF0000000000000
_PACK_UINT64, _UNPACK_DOUBLE = struct.Struct("<Q").pack, struct.Struct("<d").unpack


class ChunkError(ValueError):
    """A chunk that is truncated or not a valid XOR chunk."""


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the unsigned varint at ``pos`` (at most 10 bytes)."""
    byte = data[pos]  # past the end: IndexError, reported as a truncated chunk
    if byte < 0x80:
        return byte, pos + 1
    value, shift = byte & 0x7F, 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos + 1
        shift += 7
        if shift > 63:
            raise ChunkError("overlong varint")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the zig-zag signed varint at ``pos``."""
    raw, pos = _uvarint(data, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def decode_xor(data: bytes, start_ms: int, end_ms: int) -> tuple[list[tuple[float, float]], int]:
    """((unix seconds, value) of the finite samples ``start_ms < t <= end_ms``, non-finite
    ones dropped) of one XOR chunk; raises ``ChunkError`` on a bad chunk."""
    try:
        return _decode(data, start_ms, end_ms)
    except (IndexError, ValueError) as exc:  # a read past the end, an empty slice, a bad shift
        raise ChunkError(f"bad XOR chunk ({type(exc).__name__}: {exc})") from None


def _decode(data: bytes, start_ms: int, end_ms: int) -> tuple[list[tuple[float, float]], int]:
    if len(data) < 2:
        raise ChunkError("chunk shorter than its header")
    count = (data[0] << 8) | data[1]
    kept: list[tuple[float, float]] = []
    if count == 0:
        return kept, 0
    t, pos = _varint(data, 2)
    if pos + 8 > len(data):
        raise ChunkError("truncated first sample")
    value = int.from_bytes(data[pos : pos + 8], "big")
    skipped = _keep(t, value, start_ms, end_ms, kept)
    if count == 1 or t > end_ms:
        return kept, skipped
    delta, pos = _uvarint(data, pos + 8)
    rest = data[pos:]
    bits = format(int.from_bytes(rest, "big"), "b").zfill(8 * len(rest)) if rest else ""
    t += delta
    p, leading, trailing, value = _xor(bits, 0, 0, 0, value)
    skipped += _keep(t, value, start_ms, end_ms, kept)
    later = _Stream(bits, p, t, delta, leading, trailing, value)
    return kept, skipped + _later(later, count - 2, start_ms, end_ms, kept)


class _Stream(NamedTuple):
    """Where the bit stream stands after the first two samples."""

    bits: str
    p: int
    t: int
    delta: int
    leading: int
    trailing: int
    value: int


def _later(
    stream: _Stream, count: int, start_ms: int, end_ms: int, kept: list[tuple[float, float]]
) -> int:
    """Decode ``count`` samples after the first two into ``kept``; the non-finite dropped."""
    bits, p, t, delta, leading, trailing, value = stream
    width, skipped = 64 - leading - trailing, 0
    for _ in range(count):  # the hot loop: _xor inlined
        if t > end_ms:
            break
        if bits[p] == "0":  # the usual case: the same interval as before
            p += 1
        else:
            dod, p = _delta_of_delta(bits, p)
            delta += dod
        t += delta
        if bits[p] == "0":  # the same value
            p += 1
        else:
            if bits[p + 1] == "1":  # new leading / significant bit counts
                leading = int(bits[p + 2 : p + 7], 2)
                width = int(bits[p + 7 : p + 13], 2) or 64
                trailing = 64 - leading - width
                p += 13
            else:
                p += 2
            value ^= int(bits[p : p + width], 2) << trailing  # trailing < 0: ValueError
            p += width
        if start_ms < t <= end_ms:
            if value & _EXPONENT != _EXPONENT:
                kept.append((t / 1000, _as_float(value)))
            elif value != STALE_NAN_BITS:
                skipped += 1
    if p > len(bits):
        raise ChunkError("truncated chunk")
    return skipped


def _delta_of_delta(bits: str, p: int) -> tuple[int, int]:
    """(delta of delta, next bit) of a timestamp whose first control bit (at ``p``) is 1."""
    if bits[p + 1] == "0":
        head, size = 2, 14
    elif bits[p + 2] == "0":
        head, size = 3, 17
    elif bits[p + 3] == "0":
        head, size = 4, 20
    else:
        dod = int(bits[p + 4 : p + 68], 2)
        return (dod - (1 << 64) if dod >> 63 else dod), p + 68
    dod = int(bits[p + head : p + head + size], 2)
    if dod > 1 << (size - 1):
        dod -= 1 << size
    return dod, p + head + size


def _xor(bits: str, p: int, leading: int, trailing: int, value: int) -> tuple[int, int, int, int]:
    """(next bit, leading, trailing, value) after one XOR-encoded value at bit ``p``."""
    if bits[p] == "0":
        return p + 1, leading, trailing, value
    if bits[p + 1] == "0":
        p += 2
    else:
        leading = int(bits[p + 2 : p + 7], 2)
        significant = int(bits[p + 7 : p + 13], 2) or 64
        trailing = 64 - leading - significant
        if trailing < 0:
            raise ChunkError("more leading + significant bits than 64")
        p += 13
    width = 64 - leading - trailing
    return p + width, leading, trailing, value ^ (int(bits[p : p + width], 2) << trailing)


def _as_float(pattern: int) -> float:
    """The float whose IEEE 754 bits are ``pattern``."""
    return _UNPACK_DOUBLE(_PACK_UINT64(pattern))[0]


def _keep(t: int, value: int, start_ms: int, end_ms: int, kept: list[tuple[float, float]]) -> int:
    """Keep one sample if in range and finite: 1 when dropped as non-finite, 0 otherwise."""
    if t <= start_ms or t > end_ms:
        return 0
    if value & _EXPONENT != _EXPONENT:
        kept.append((t / 1000, _as_float(value)))
        return 0
    return 0 if value == STALE_NAN_BITS else 1
