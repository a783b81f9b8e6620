"""Deterministic pseudo-randomness: every value is a pure function of (seed, keys)."""

from __future__ import annotations

import hashlib

_MASK = 0xFFFFFFFF


def unit(*keys: object) -> float:
    """A stable float in [0, 1) for the given keys (slow-ish: use for schedules, not samples)."""
    digest = hashlib.blake2b(repr(keys).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def entity_key(*keys: object) -> int:
    """A stable 32-bit integer identifying an entity (a GPU, a port) for `jitter`."""
    digest = hashlib.blake2b(repr(keys).encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def jitter(key: int, tick: int) -> float:
    """Fast noise in [-1, 1) for one entity at one tick (an integer mix, no hashing library)."""
    x = (key * 0x9E3779B1 + tick * 0x85EBCA77) & _MASK
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & _MASK
    x ^= x >> 12
    x = (x * 0x297A2D39) & _MASK
    x ^= x >> 15
    return x / 2147483648.0 - 1.0
