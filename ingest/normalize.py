"""Pure normalisation: decoded Prometheus series → per-step rows (no I/O, no ORM).

Every answer is a step-aligned ``query_range`` up to the window end, a
counter's from the window start (the context point), a gauge's from the first
step. Series are folded by a key (node + gpu, or node + device + port) into
columns; duplicates of one key (the same GPU scraped through two targets)
collapse to their max. Gauges are read at each step; counters become
the exact increase over the step from two consecutive values, with resets
handled like Prometheus (a drop means the counter restarted from 0) and a
32-bit counter pegged at 4294967295 reported as unknown (None) plus a flag,
never as 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .prometheus import PrometheusError

SATURATED_32 = 4294967295.0
Points = dict[float, float]
#: One metric's answer folded by series key: ts → key → value.
Folded = dict[float, dict[Hashable, float]]
KeyOf = Callable[[Mapping[str, str]], Hashable | None]
_NOTHING: Mapping[Hashable, float] = {}


@dataclass
class Collected:
    """One pull's columns, column → ts → key → value (``Folded``); plus the points skipped.

    Columnar, and folded straight from the decoded JSON (``fold``): a pull
    reads every metric for the same tens of thousands of keys at one or two
    steps, and per-series / per-key objects were most of the ingest time.
    """

    columns: dict[str, Folded] = field(default_factory=dict)
    skipped: int = 0

    def add_answers(
        self, names: Sequence[str], answers: Iterable[tuple[int, object]], key_of: KeyOf
    ) -> None:
        """Fold each (query index, ``data.result`` or ``PrometheusError``) into column ``names[index]``.

        A malformed answer counts as ONE skipped item for its column, which then
        stays empty (what its other chunks folded is dropped). ``key_of`` runs
        once per distinct label set: every metric answers for the same series.
        """
        keys: dict[object, Hashable | None] = {}
        folded: dict[int, Folded] = {}
        skipped: dict[int, int] = {}
        failed: set[int] = set()
        for index, result in answers:
            if index in failed:
                continue
            try:
                if isinstance(result, PrometheusError):
                    raise result
                points = fold(result, key_of, keys, folded.setdefault(index, {}))
                skipped[index] = skipped.get(index, 0) + points
            except PrometheusError:
                failed.add(index)
        for index, name in enumerate(names):
            if index in failed:
                self.skipped += 1
            elif index in folded:
                self.columns[name] = folded[index]
                self.skipped += skipped[index]

    def keys(self) -> list[Hashable]:
        """Every key with a value in some column, sorted."""
        found: set[Hashable] = set()
        for folded in self.columns.values():
            for values in folded.values():
                found.update(values)
        return sorted(found)  # type: ignore[type-var]

    def keys_of(self, column: str) -> set[Hashable]:
        """The keys with a value of ``column`` at some step of the window (context included)."""
        return set().union(*self.columns.get(column, {}).values())


def fold(  # noqa: C901 - the hot loop (~1M series a cycle at 4,096 nodes): a call costs more
    result: object, key_of: KeyOf, keys: dict[object, Hashable | None], into: Folded
) -> int:
    """Decode a matrix / vector ``data.result`` into ``into`` by series key; returns points skipped.

    Counts what ``prometheus.decode`` + keying count: malformed items and
    points, NaN/±Inf points, and the finite points of series without a key.
    Duplicates of a key (one GPU scraped through two targets) collapse to their
    max. ``keys`` memoises ``key_of`` by label set. Raises ``PrometheusError``
    when ``result`` is not a list.
    """
    if not isinstance(result, list):
        raise PrometheusError(f"unexpected answer: result is {type(result).__name__}, not a list")
    skipped = 0
    for item in result:
        if not isinstance(item, dict) or not isinstance(metric := item.get("metric"), dict):
            skipped += 1
            continue
        raw_points = item.get("values")
        if raw_points is None and "values" not in item:
            raw_points = [item.get("value")]  # an instant vector
        if not isinstance(raw_points, list):
            skipped += 1
            continue
        try:  # key_of once per label set (inline: a call per series costs)
            key = keys[label_set := tuple(metric.items())]
        except KeyError:
            key = keys[label_set] = key_of({str(k): str(v) for k, v in metric.items()})
        except TypeError:  # an unhashable label value (malformed): not cached
            key = key_of({str(k): str(v) for k, v in metric.items()})
        for raw in raw_points:
            try:
                stamp, value = raw
                number, stamp = float(value), float(stamp)
            except (TypeError, ValueError):
                skipped += 1
                continue
            # x - x is 0.0 for finite x and NaN for NaN / ±Inf (cheaper than two isfinite calls).
            if number - number != 0.0 or stamp - stamp != 0.0 or key is None:
                skipped += 1
                continue
            at = into.get(stamp)
            if at is None:
                at = into[stamp] = {}
            previous = at.get(key)
            if previous is None or number > previous:
                at[key] = number
    return skipped


def steps(start: int, end: int, step: int) -> list[int]:
    """The step timestamps a window covers: ``start < ts <= end``."""
    return list(range(start + step, end + 1, step))


@dataclass(frozen=True)
class Column:
    """How one stored column is computed: ``gauge``, ``rate`` or ``increase`` of a source metric."""

    name: str
    kind: str
    saturation_bit: int = 0


def column_at(
    collected: Collected, column: Column, keys: Sequence[Hashable], ts: int, step: int
) -> list[float | None]:
    """``column``'s stored value for each key at step ``ts``, None where missing or unknown.

    A counter's increase is ``value - previous``, or ``value`` when it dropped
    (the counter restarted from 0); unknown without a previous value or when
    pegged at 2^32-1 (see ``saturation_masks``). Column-wise comprehensions:
    a function call per value was most of the row-building time.
    """
    folded = collected.columns.get(column.name, {})
    now = folded.get(ts, _NOTHING)
    if column.kind == "gauge":
        return [now.get(key) for key in keys]
    before = folded.get(ts - step, _NOTHING)
    increases = [
        None
        if (value := now.get(key)) is None
        or value == SATURATED_32
        or (previous := before.get(key)) is None
        else value - previous
        if value >= previous
        else value
        for key in keys
    ]
    if column.kind == "rate":
        return [None if delta is None else delta / step for delta in increases]
    return increases


def saturation_masks(collected: Collected, spec: Iterable[Column], ts: int) -> dict[Hashable, int]:
    """key → bitmask of the spec columns whose 32-bit counter is pegged at ``ts`` (0: absent)."""
    masks: dict[Hashable, int] = {}
    for column in spec:
        if not column.saturation_bit:
            continue
        for key, value in collected.columns.get(column.name, {}).get(ts, _NOTHING).items():
            if value == SATURATED_32:
                masks[key] = masks.get(key, 0) | column.saturation_bit
    return masks


def int_label(labels: Mapping[str, str], name: str) -> int | None:
    """An integer label value (gpu, port), or None when absent or not a number."""
    try:
        return int(labels[name])
    except (KeyError, ValueError):
        return None


_HCA = re.compile(r"^(?P<node>\S+)\s+(?:HCA|hca|mlx5)[-_]?(?P<index>\d+)$")


def split_hca(hca: str) -> tuple[str, str] | None:
    """``"gpu-017 HCA-1"`` → ``("gpu-017", "mlx5_0")``: the node and its device name.

    treydock names HCAs by node description; HCA-N is the N-th adapter, which
    the kernel (and node_exporter) calls mlx5_{N-1}, so both dialects name the
    same port the same way.
    """
    match = _HCA.match(hca.strip())
    if match is None:
        node, _, rest = hca.strip().partition(" ")
        return (node, rest or "mlx5_0") if node else None
    return match["node"], f"mlx5_{int(match['index']) - 1}"


def xid_events(
    tracks: list[tuple[str, Points]], times: list[int], previous: int | None
) -> list[tuple[int, int, str]]:
    """New or changed XID codes of one GPU as (ts, code, message).

    ``times[0]`` is the window start: its value is context only. DCGM's gauge is
    sticky, so only a value not present at the previous step and different from
    the current code is an event; ``previous`` (the last stored event's code) is
    the current code when the window has no context point. Code 0 is "no error".
    """
    events: list[tuple[int, int, str]] = []
    current, before = previous, set[int]()
    for index, ts in enumerate(times):
        present = {int(pts[ts]): msg for msg, pts in tracks if ts in pts}
        fresh = set(present) - before - {current}
        if fresh:
            code = max(fresh)
            if index > 0 and code != 0:
                events.append((ts, code, present[code]))
            current = code
        elif present and current not in present:
            current = min(present)
        before = set(present)
    return events
