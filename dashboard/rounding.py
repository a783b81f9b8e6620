"""Rounding of series values for the wire (the node pages and their JSON)."""

from __future__ import annotations

from math import floor


def compact(value: float | None) -> float | None:
    """Round for the wire: big rates to integers, small values to 3 decimals (half up)."""
    if value is None:
        return None
    return floor(value + 0.5) * 1.0 if abs(value) >= 1000 else floor(value * 1000 + 0.5) / 1000


def compact_all(values: list[float | None]) -> list[float | None]:
    """``compact`` of each value, inlined (a node page compacts ~5,000 values)."""
    return [
        None
        if v is None
        else floor(v + 0.5) * 1.0
        if abs(v) >= 1000
        else floor(v * 1000 + 0.5) / 1000
        for v in values
    ]
