"""Values as the hot and compacted encodings keep them (docs/scaling.md, precision table)."""

from __future__ import annotations

import struct

#: Two float4 roundings (a stored value against the mean of stored values) differ by at most
#: this much, relatively: 2 × 2^-24, rounded up to a power of two.
FLOAT4_PAIR_RTOL = 2.0**-22


def float4(value: float) -> float:
    """``value`` rounded to the nearest float4, as Postgres' ``real`` keeps it."""
    return struct.unpack("f", struct.pack("f", value))[0]
