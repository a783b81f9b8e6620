"""Prometheus text exposition helpers: escaping, label strings, family headers, number format."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

GAUGE, COUNTER, HISTOGRAM = "gauge", "counter", "histogram"


@dataclass(frozen=True)
class Family:
    """A metric family: name, type and help text as the real exporter declares them."""

    name: str
    type: str
    help: str


def escape(value: str) -> str:
    """Escape a label value for the text format (backslash, quote, newline)."""
    if "\\" in value or '"' in value or "\n" in value:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def label_str(pairs: Iterable[tuple[str, str]]) -> str:
    """'a="x",b="y"' for the given pairs (no braces, values escaped)."""
    return _label_str(tuple(pairs))


@functools.lru_cache(maxsize=1 << 16)
def _label_str(pairs: tuple[tuple[str, str], ...]) -> str:
    # A series' labels are the same at every step: history renders each one once per series,
    # not once per sample (most of a history's rendering time before).
    return ",".join(f'{k}="{escape(v)}"' for k, v in pairs)


def header(family: Family) -> str:
    """The # HELP and # TYPE lines of a family."""
    return f"# HELP {family.name} {family.help}\n# TYPE {family.name} {family.type}"


def num(value: float) -> str:
    """A sample value: integers without a fraction, other floats with 6 significant digits."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.6g}"


def big(value: float) -> str:
    """A counter or timestamp value, printed without losing digits."""
    return str(int(value)) if abs(value) < 1e18 else repr(value)


class Lines:
    """Collects exposition lines for one target; `extra` labels are appended to every sample.

    Live scrapes use no extra labels (Prometheus adds job and instance); history adds them.
    """

    def __init__(
        self, extra: str = "", with_headers: bool = True, keep: frozenset[str] | None = None
    ) -> None:
        self.extra = extra
        self.with_headers = with_headers
        self.keep = keep  # None keeps every family
        self.skipping = False
        self.out: list[str] = []

    def wants(self, name: str) -> bool:
        """Whether family `name` is written (renderers skip computing what would be dropped)."""
        return self.keep is None or name in self.keep

    def family(self, family: Family) -> None:
        """Start a family (writes its header in live mode; skipped if not in `keep`)."""
        self.skipping = self.keep is not None and family.name not in self.keep
        if self.with_headers and not self.skipping:
            self.out.append(header(family))

    def sample(self, name: str, labels: str, value: str) -> None:
        """Append one sample; `labels` is a pre-rendered label_str (may be empty)."""
        if self.skipping:
            return
        joined = f"{labels},{self.extra}" if labels and self.extra else labels or self.extra
        self.out.append(f"{name}{{{joined}}} {value}" if joined else f"{name} {value}")

    def samples(self, name: str, labels: list[str], values: list[str]) -> None:
        """Append one sample per (labels, value) pair: the fast path for per-GPU/per-port rows."""
        if self.skipping:
            return
        if self.extra:
            labels = [f"{lab},{self.extra}" if lab else self.extra for lab in labels]
        self.out.extend([f"{name}{{{lab}}} {v}" for lab, v in zip(labels, values, strict=True)])
