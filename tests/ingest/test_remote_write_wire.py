"""remote_write_wire reads WriteRequests exactly as the generated protobuf classes do."""

from __future__ import annotations

import math
import struct

import cramjam
import pytest

from ingest.push_receiver import PushError, decode_write
from ingest.remote_read import PROMPB
from ingest.remote_write_wire import MALFORMED, Cache, Irregular, decode
from tests.support.remote_write import STALE_NAN, _uvarint

LONG = "x" * 200  # a two-byte length
HUGE = "y" * 20_000  # a three-byte length
SERIES = [
    (
        (("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("Hostname", "gpu-001"), ("gpu", "0")),
        [(1_772_452_800_000, 42.0)],
    ),
    (
        (("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("Hostname", "gpu-001"), ("gpu", "1")),
        [(1_772_452_800_000, 0.0)],
    ),
    ((("__name__", "zero_time"), ("a", "")), [(0, 1.5), (-5_000, -2.25)]),
    (
        (("__name__", "specials"), ("b", "ünïcödé ✓")),
        [(1, math.inf), (2, -math.inf), (3, STALE_NAN), (4, math.nan)],
    ),
    ((("__name__", "long"), ("v", LONG), ("w", HUGE)), [(2**62, 1e-300), (2**40 + 7, 5e300)]),
    ((("__name__", "no_samples"),), []),
    ((), [(10, 1.0)]),
]


def series_bytes(labels, samples, tail: bytes = b"") -> bytes:  # noqa: ANN001
    message = PROMPB["TimeSeries"]()
    for name, value in labels:
        message.labels.add(name=name, value=value)
    for ms, value in samples:
        message.samples.add(timestamp=ms, value=value)
    encoded = message.SerializeToString() + tail
    return b"\x0a" + _uvarint(len(encoded)) + encoded


def by_protobuf(data: bytes) -> list:
    return decode_write(bytes(cramjam.snappy.compress_raw(data)), 1 << 30, None)


def comparable(series: list) -> list:
    """NaN != NaN: compare values by their bits (None, a staleness marker, stays None)."""
    return [
        (pairs, [(ms, None if v is None else struct.pack("<d", v)) for ms, v in samples])
        for pairs, samples in series
    ]


def test_canonical_bodies_decode_as_protobuf_does() -> None:
    data = b"".join(series_bytes(labels, samples) for labels, samples in SERIES)
    fast = decode(data, Cache())
    assert comparable(fast) == comparable(by_protobuf(data))
    assert fast[0] == (SERIES[0][0], [(1_772_452_800_000, 42.0)])
    assert fast[2][1] == [(0, 1.5), (-5_000, -2.25)]  # 0 omitted on the wire; negative: 10 bytes
    assert fast[3][1][2] == (3, None)  # the staleness marker
    assert math.isnan(fast[3][1][3][1])  # an ordinary NaN stays a value
    assert fast[4][0][2] == ("w", HUGE)


def test_unknown_fields_are_skipped_as_protobuf_skips_them() -> None:
    exemplar = b"\x1a\x05" + b"\x0a\x03abc"  # TimeSeries.exemplars = 3 (length-delimited)
    histogram = b"\x22\x02\x08\x01"  # TimeSeries.histograms = 4
    extra_varint, extra_fixed32 = b"\x28\x96\x01", b"\x35\x00\x00\x80\x3f"  # fields 5 and 6
    metadata = b"\x1a\x04\x08\x01\x12\x00"  # WriteRequest.metadata = 3
    data = (
        series_bytes(*SERIES[0], tail=exemplar + histogram + extra_varint + extra_fixed32)
        + metadata
        + series_bytes(*SERIES[1])
    )
    fast = decode(data, Cache())
    assert fast == [SERIES[0], SERIES[1]]
    assert comparable(fast) == comparable(by_protobuf(data))


def test_the_cache_hands_back_the_same_objects() -> None:
    cache = Cache()
    first = decode(series_bytes(*SERIES[0]) + series_bytes(*SERIES[1]), cache)
    again = decode(series_bytes(SERIES[0][0], [(1_772_452_830_000, 43.0)]), cache)
    assert again[0][0] is first[0][0]
    assert again[0][1] == [(1_772_452_830_000, 43.0)]
    assert len(cache.series) == 2
    assert first[1][0][1] is first[0][0][1]  # gpu-001's Hostname label: one tuple for both
    assert first[1][1][0][0] is first[0][1][0][0]  # one timestamp object per scrape
    assert len(cache.pairs) == 4  # __name__, Hostname, gpu 0, gpu 1


def test_labels_after_samples_go_to_protobuf_with_the_same_result() -> None:
    label = b"\x0a\x0c\x0a\x01z\x12\x07late-lb"  # Label{name: z, value: late-lb}
    data = series_bytes(*SERIES[0], tail=label)
    with pytest.raises(Irregular):
        decode(data, Cache())
    expected = [(SERIES[0][0] + (("z", "late-lb"),), SERIES[0][1])]
    assert by_protobuf(data) == expected
    assert decode_write(bytes(cramjam.snappy.compress_raw(data)), 1 << 30, Cache()) == expected


@pytest.mark.parametrize(
    "data",
    [
        series_bytes(*SERIES[0])[:-3],  # truncated inside a sample
        series_bytes(*SERIES[0])[:9],  # truncated inside a label
        b"\x0a\x05\x0a\x03\x0a\x01\xff",  # a label name that is not UTF-8
        b"\x0a\x80",  # a length that never ends
        b"\x0b\x00",  # wire type 3 (groups)
    ],
)
def test_malformed_bodies_raise_and_protobuf_says_why(data: bytes) -> None:
    with pytest.raises(MALFORMED):
        decode(data, Cache())
    with pytest.raises(PushError) as refused:
        decode_write(bytes(cramjam.snappy.compress_raw(data)), 1 << 30, Cache())
    assert refused.value.status == 400
    assert str(refused.value).startswith("body is not a snappy WriteRequest: ")
