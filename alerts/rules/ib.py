"""InfiniBand port rules: error counters, link flaps, saturated counters (NVSentinel thresholds)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, IbErrorPoint, Signal
from .series import duration, group, iso

PORT_KEY = attrgetter("node", "device", "port")
STATE_ACTIVE = 4


def port_labels(node: str, device: str, port: int) -> dict[str, str]:
    """The scope labels of a port alert."""
    return {"node": node, "device": device, "port": str(port)}


def leaf_extra(data: EvaluationData, key: tuple[str, str, int]) -> dict[str, str]:
    """The ``leaf_switch`` label of a port, when the topology is known."""
    leaf = data.leaf_switches.get(key)
    return {"leaf_switch": leaf} if leaf else {}


@register
class IbPortErrors(BaseRule):
    """A port's error counters crossed NVIDIA NVSentinel's thresholds within the window.

    Fatal (the rule's severity): symbol errors > 120 per window (1 h), any
    increase of local_link_integrity or excessive_buffer_overrun. Degraded
    (``degraded_severity``): symbol errors > 10/s or port_rcv_errors > 10/s in
    one step, link_error_recovery > 5/min. Like ``increase(x[1h])``, the
    condition stays true up to one window after the last error.
    """

    id = "ib_port_errors"
    needs = ("ib_errors", "leaf_switches")
    family = Family.IB
    scope = ("node", "device", "port")
    severity = "critical"
    params = (
        Param(
            "symbol_errors_per_window",
            float,
            120.0,
            "symbol errors per window above which it fires",
        ),
        Param(
            "symbol_errors_per_second",
            float,
            10.0,
            "symbol error rate (/s, one step) above which it fires",
        ),
        Param(
            "rcv_errors_per_second",
            float,
            10.0,
            "port_rcv_errors rate (/s, one step) above which it fires",
        ),
        Param(
            "link_error_recovery_per_minute",
            float,
            5.0,
            "link error recoveries per minute above which",
        ),
        Param("window_seconds", int, 3600, "the counting window"),
        Param(
            "degraded_severity", str, "warning", "severity when only a rate threshold is crossed"
        ),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        window = float(p["window_seconds"])
        step = data.step
        for key, points in group(data.ib_errors, PORT_KEY):
            reasons = list(_reasons(points, window, step, p))
            truth = [bool(r) for r in reasons]
            if True not in truth:
                continue

            def describe(
                i: int, key: tuple = key, reasons: list = reasons, points: list = points
            ) -> Detail:
                node, device, port = key
                recent = [r for r in reasons[: i + 1] if r and points[i].ts - window < r[2]]
                fatal = any(r[0] for r in recent)
                latest = recent[-1][1]
                severity = settings.severity if fatal else p["degraded_severity"]
                summary = f"IB port errors on {node} {device}:{port}: {latest}"
                context = {"reason": latest, "fatal": fatal, "at": iso(points[i].ts)}
                return Detail(points[i].symbol_errors, summary, context, severity)

            yield Signal(
                port_labels(*key),
                [pt.ts for pt in points],
                truth,
                window,
                describe,
                leaf_extra(data, key),
            )


def _reasons(
    points: list[IbErrorPoint], window: float, step: float, p: dict
) -> Iterator[tuple[bool, str, float] | None]:
    """Per point: (fatal, reason, ts) of the worst crossed threshold, or None."""
    queue: deque[IbErrorPoint] = deque()
    symbols = 0.0
    for pt in points:
        queue.append(pt)
        symbols += pt.symbol_errors
        while queue[0].ts <= pt.ts - window:
            symbols -= queue.popleft().symbol_errors
        if symbols > p["symbol_errors_per_window"]:
            yield True, f"{symbols:.0f} symbol errors in {duration(window)}", pt.ts
        elif pt.local_link_integrity > 0:
            yield True, "local link integrity errors", pt.ts
        elif pt.excessive_buffer_overrun > 0:
            yield True, "excessive buffer overruns", pt.ts
        elif pt.symbol_errors / step > p["symbol_errors_per_second"]:
            yield False, f"{pt.symbol_errors / step:.1f} symbol errors/s", pt.ts
        elif pt.rcv_errors / step > p["rcv_errors_per_second"]:
            yield False, f"{pt.rcv_errors / step:.1f} receive errors/s", pt.ts
        elif pt.link_error_recovery * 60 / step > p["link_error_recovery_per_minute"]:
            yield (
                False,
                f"{pt.link_error_recovery * 60 / step:.1f} link error recoveries/min",
                pt.ts,
            )
        else:
            yield None


@register
class IbLinkFlap(BaseRule):
    """A link went down and came back: link_downed increased, or the state left active and returned.

    The condition holds for ``window_seconds`` (15 min) after each flap, so a
    link that flaps every few minutes is one alert, not many. A return to active
    is a port whose node reports IB samples after the port's non-active steps
    (non-active samples are all in the sparse error rows; later ones are active).
    """

    id = "ib_link_flap"
    needs = ("ib_errors", "leaf_switches", "ib_last")
    family = Family.IB
    scope = ("node", "device", "port")
    severity = "critical"
    params = (Param("window_seconds", int, 900, "how long a flap keeps the condition true"),)

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        window = float(settings.params["window_seconds"])
        node_last = data.last_ib_sample()
        for key, points in group(data.ib_errors, PORT_KEY):
            flaps = [
                (pt.ts, f"link_downed +{pt.link_downed:.0f}") for pt in points if pt.link_downed > 0
            ]
            downed = [ts for ts, _ in flaps]
            flaps += [  # a return already counted by link_downed is the same flap
                (ts, why)
                for ts, why in _state_returns(points, node_last.get(key[0]), data.max_gap)
                if not any(abs(ts - d) <= data.max_gap for d in downed)
            ]
            if not flaps:
                continue
            flaps.sort()

            def describe(i: int, key: tuple = key, flaps: list = flaps) -> Detail:
                recent = [f for f in flaps[: i + 1] if f[0] > flaps[i][0] - window]
                node, device, port = key
                summary = (
                    f"IB link flap on {node} {device}:{port}: {len(recent)} in {duration(window)}"
                )
                return Detail(
                    float(len(recent)), summary, {"flaps": [[iso(t), why] for t, why in recent]}
                )

            yield Signal(
                port_labels(*key),
                [t for t, _ in flaps],
                [True] * len(flaps),
                window,
                describe,
                leaf_extra(data, key),
            )


def _state_returns(
    points: list[IbErrorPoint], last_seen: float | None, gap: float
) -> list[tuple[float, str]]:
    """Times a port came back to active after non-active steps (later samples absent here are active)."""
    down = [pt.ts for pt in points if pt.state is not None and pt.state != STATE_ACTIVE]
    returns = []
    for i, ts in enumerate(down):
        run_ends = i + 1 == len(down) or down[i + 1] - ts > gap
        if run_ends and last_seen is not None and last_seen > ts:
            returns.append((ts, "state left active and returned"))
    return returns


@register
class IbCounterSaturated(BaseRule):
    """An IB counter is pegged at its width's maximum (e.g. 255 for the 8-bit link_downed,
    65535 for symbol_error, 2^32-1 for xmit_wait): it no longer counts, so the port is flagged
    (ingest stores the value NULL and sets the counter's bit in ``saturated``)."""

    id = "ib_counter_saturated"
    needs = ("ib", "leaf_switches")
    family = Family.IB
    scope = ("node", "device", "port")
    severity = "warning"

    def prefilter(self, settings: RuleSettings) -> dict[str, tuple[str, list[Any]]]:
        """Only ports with a pegged counter at some step."""
        return {"ib": ("saturated <> 0", [])}

    def history_mark(self, settings: RuleSettings) -> dict[str, str]:
        """``wait`` (saturated <> 0 OR xmit_wait >= 0.000625 × rate) holds every saturated step."""
        return {"ib": "wait"}

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        for key, points in group(data.ib, PORT_KEY):
            truth = [pt.saturated != 0 for pt in points]
            if True not in truth:
                continue

            def describe(i: int, key: tuple = key, points: list = points) -> Detail:
                mask = points[i].saturated
                summary = f"Saturated IB counters on {key[0]} {key[1]}:{key[2]} (mask {mask:#x})"
                return Detail(float(mask), summary, {"saturated_mask": mask})

            yield Signal(
                port_labels(*key),
                [pt.ts for pt in points],
                truth,
                data.max_gap,
                describe,
                leaf_extra(data, key),
            )
