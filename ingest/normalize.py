"""Pure normalisation: decoded Prometheus series → per-step rows (no I/O, no ORM).

Every answer is a step-aligned ``query_range`` up to the window end, a
counter's from the window start (the context point), a gauge's from the first
step. Series are folded by a key (node + gpu, or node + device + port) into
columns; duplicates of one key (the same GPU scraped through two targets)
collapse to their max. Gauges are read at each step; counters become
the exact increase over the step from two consecutive values, with resets
handled like Prometheus (a drop means the counter restarted from 0) and a
counter pegged at its maximum (``Column.pegged``: 2^width - 1, e.g. 255 for
IB's 8-bit link_downed) reported as unknown (None) plus a flag, never as 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .prometheus import PrometheusError

SATURATED_32 = 4294967295.0


def counter_max(bits: int, scale: int = 1) -> float:
    """The value a ``bits``-wide counter sticks at, times ``scale`` (node_exporter's data x4)."""
    return float((2**bits - 1) * scale)


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
    #: The value the source counter sticks at (saturates) instead of wrapping.
    pegged: float = SATURATED_32


def column_at(
    collected: Collected, column: Column, keys: Sequence[Hashable], ts: int, step: int
) -> list[float | None]:
    """``column``'s stored value for each key at step ``ts``, None where missing or unknown.

    A counter's increase is ``value - previous``, or ``value`` when it dropped
    (the counter restarted from 0); unknown without a previous value or when
    pegged at ``column.pegged`` (see ``saturation_masks``). Column-wise comprehensions:
    a function call per value was most of the row-building time.
    """
    folded = collected.columns.get(column.name, {})
    now = folded.get(ts, _NOTHING)
    if column.kind == "gauge":
        return [now.get(key) for key in keys]
    before, pegged = folded.get(ts - step, _NOTHING), column.pegged
    increases = [
        None
        if (value := now.get(key)) is None
        or value == pegged
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
    """key → bitmask of the spec columns whose counter is pegged (``Column.pegged``) at ``ts``."""
    masks: dict[Hashable, int] = {}
    for column in spec:
        if not column.saturation_bit:
            continue
        for key, value in collected.columns.get(column.name, {}).get(ts, _NOTHING).items():
            if value == column.pegged:
                masks[key] = masks.get(key, 0) | column.saturation_bit
    return masks


def int_label(labels: Mapping[str, str], name: str) -> int | None:
    """An integer label value (gpu, port), or None when absent or not a number."""
    try:
        return int(labels[name])
    except (KeyError, ValueError):
        return None


#: A host name as a node description carries it (RFC 1123 labels, dots allowed).
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
_HCA_INDEX, _DEVICE = "[1-9][0-9]{0,2}", "[a-z][a-z0-9]*_[0-9]{1,3}"
#: MLNX_OFED's default node description: "<host> HCA-<N>", N counted from 1.
_HCA_N = re.compile(rf"^(?P<node>{_HOST}) +HCA-(?P<index>{_HCA_INDEX})$")
#: rdma-core's default (rdma-ndd "%h %d"): "<host> <kernel device>", e.g. "worker20 mlx5_3".
_HOST_DEVICE = re.compile(rf"^(?P<node>{_HOST}) +(?P<device>{_DEVICE})$")
#: Both accepted forms as one RE2-compatible pattern (coverage counts the CAs it rejects).
HOST_CA_PATTERN = rf"{_HOST} +(?:HCA-{_HCA_INDEX}|{_DEVICE})"
#: SHARP's in-switch aggregation manager is a CA with this node description.
SHARP_AGGREGATION = "Mellanox Technologies Aggregation Node"


@dataclass(frozen=True)
class HcaName:
    """A treydock ``hca`` label (an IB node description) read as (node, device), or why not."""

    node: str = ""
    device: str = ""
    skip: str = ""  # "" when node/device are set; else the reason (a SkipReason value)


class SkipReason:
    """Why a treydock CA is not a host port (counted per reason in the IB family's notes)."""

    AGGREGATION_NODE = "sharp_aggregation_node"
    UNRECOGNISED = "unrecognised_node_description"
    NO_HCA_INFO = "no_hca_info"


def split_hca(hca: str) -> HcaName:
    """A node description → its node and kernel device name, or a skip reason.

    Accepted (exactly two words, the first a host name):
    ``"gpu-017 HCA-1"`` (MLNX_OFED: HCA-N is the N-th adapter, the kernel's
    mlx5_{N-1}) → ("gpu-017", "mlx5_0"); ``"worker20 mlx5_3"`` (rdma-core's
    default) → ("worker20", "mlx5_3"), the device taken as written. Anything
    else (SHARP's "Mellanox Technologies Aggregation Node", a switch's name,
    free text from a node-name map) is skipped: a guess would create a phantom node.
    """
    text = hca.strip()
    if match := _HCA_N.match(text):
        return HcaName(match["node"], f"mlx5_{int(match['index']) - 1}")
    if match := _HOST_DEVICE.match(text):
        return HcaName(match["node"], match["device"])
    if not text:
        return HcaName(skip=SkipReason.NO_HCA_INFO)
    if text == SHARP_AGGREGATION:
        return HcaName(skip=SkipReason.AGGREGATION_NODE)
    return HcaName(skip=SkipReason.UNRECOGNISED)


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
