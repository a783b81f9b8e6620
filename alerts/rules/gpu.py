"""GPU rules: tensor-core drift (the flagship), XIDs and NVLink errors."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from ingest.drift import HUNG_GPU
from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, GoneXid, GpuPoint, NvlinkPoint, Signal, XidPoint
from .series import Allocations, duration, group, iso, streak_start

_GPU_KEY = attrgetter("node", "gpu")

HARDWARE_XIDS = [48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
APPLICATION_XIDS = [13, 31, 43, 45]
#: "GPU has fallen off the bus" (dcgm-exporter internal/pkg/collector/xid_errors.go): the GPU is
#: unreachable until it is reset, so its alert lasts until it reports again, not a window.
GONE_XIDS = [79]


@register
class TensorDrift(BaseRule):
    """GPU util says busy while the tensor cores are idle, for a sustained time, on a GPU of a run.

    A GPU stuck in a hung NCCL collective shows ~100 % util at ~70 W with idle
    tensor cores (docs/domain.md, "Drift"). The condition at a step: util ≥ ``util_min`` (90 %)
    and tensor activity ≤ ``tensor_max`` (0.05) and, when exported, SM activity
    ≤ ``sm_max`` (0.3: NCCL's spinning kernels occupy a few SMs) and power ≤
    ``power_max_watts`` (200 W: an H100/H200 training step draws 400–700 W).
    It must hold for ``for`` = 10 min on a GPU whose node holds a run's pod.

    Why these defaults do not fire on normal dips: a checkpoint write takes
    30–90 s (δ ≈ 60 s in the Young/Daly example) and during it util itself drops
    (GPUs wait on storage), so the util condition is false; a data-loading stall
    lasts seconds to a couple of minutes. Ten minutes is far beyond both yet
    catches a hang well before NCCL's default 30-minute watchdog. Idle GPUs have
    low util and GPUs without a run are skipped (``require_run``). A GPU without
    the profiling metric (DCGM profiling module not loaded) is never judged:
    without the tensor metric there is no drift to see. ``keep_firing_for`` = 2 min
    bridges a single noisy sample.
    """

    id = "gpu_tensor_drift"
    needs = ("gpu", "assignments")
    family = Family.GPU
    scope = ("node", "gpu")
    severity = "critical"
    for_seconds = 600
    keep_firing_for_seconds = 120
    params = (
        Param(
            "util_min",
            float,
            HUNG_GPU.util_min_percent,
            "GPU util (%) at or above which the GPU counts as busy",
        ),
        Param(
            "tensor_max",
            float,
            HUNG_GPU.tensor_max_ratio,
            "tensor-core activity (0..1) at or below which they count as idle",
        ),
        Param(
            "sm_max",
            float,
            0.3,
            "SM activity (0..1) at or below which SMs count as idle, when exported",
        ),
        Param(
            "power_max_watts", float, 200.0, "power (W) at or below which the GPU counts as idle"
        ),
        Param("require_run", bool, True, "only GPUs of nodes that hold a run's pod"),
    )

    def prefilter(self, settings: RuleSettings) -> dict[str, tuple[str, list[Any]]]:
        """Only GPUs that were busy with idle tensor cores at some step."""
        p = settings.params
        return {"gpu": ("util >= %s AND tensor <= %s", [p["util_min"], p["tensor_max"]])}

    def history_mark(self, settings: RuleSettings) -> dict[str, str]:
        """The ``drift`` mark (util >= 90 AND tensor <= 0.05) when the thresholds are as strict."""
        p = settings.params
        return {"gpu": "drift"} if p["util_min"] >= 90 and p["tensor_max"] <= 0.05 else {}

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        util_min, tensor_max = p["util_min"], p["tensor_max"]
        sm_max, power_max = p["sm_max"], p["power_max_watts"]
        runs = Allocations(data.assignments, data.max_gap)
        for (node, gpu), points in group(data.gpu, _GPU_KEY):
            truth = [
                pt.util is not None
                and pt.util >= util_min
                and pt.tensor is not None
                and pt.tensor <= tensor_max
                and (pt.sm is None or pt.sm <= sm_max)
                and (pt.power is None or pt.power <= power_max)
                for pt in points
            ]
            if True not in truth:
                continue
            if p["require_run"]:
                truth = [
                    ok and runs.at(node, pt.ts) is not None
                    for ok, pt in zip(truth, points, strict=True)
                ]
                if True not in truth:
                    continue
            yield self._signal(node, gpu, points, truth, runs, data.max_gap)

    def _signal(
        self,
        node: str,
        gpu: int,
        points: list[GpuPoint],
        truth: list[bool],
        runs: Allocations,
        gap: float,
    ) -> Signal:
        times = [pt.ts for pt in points]

        def describe(i: int) -> Detail:
            pt = points[i]
            run = runs.at(node, pt.ts)
            held = pt.ts - streak_start(times, truth, i, gap)
            context = {
                "util": pt.util,
                "tensor": pt.tensor,
                "sm": pt.sm,
                "power": pt.power,
                "namespace": run.namespace if run else None,
                "run": run.run if run else None,
                "pod": run.pod if run else None,
                "held_seconds": held,
                "at": iso(pt.ts),
            }
            summary = (
                f"GPU {gpu} on {node}: util {pt.util:.0f}% but tensor cores {pt.tensor:.1%} active "
                f"for {duration(held)}" + (f" (run {run.namespace}/{run.run})" if run else "")
            )
            return Detail(pt.tensor, summary, context)

        last = max(i for i, ok in enumerate(truth) if ok)
        run = runs.at(node, points[last].ts)
        extra = {"namespace": run.namespace, "run": run.run} if run else {}
        return Signal({"node": node, "gpu": str(gpu)}, times, truth, gap, describe, extra)


@register
class GpuXid(BaseRule):
    """A GPU reported an XID: hardware codes are critical, application codes a warning.

    DCGM's XID gauge is sticky, so ingest stores only new or changed codes; the
    condition holds for ``window_seconds`` (1 h) after each event. Codes in
    neither list are ignored. A "GPU gone" code (``gone_codes``: 79, "GPU has
    fallen off the bus", NVIDIA's XID catalogue: the GPU is no longer reachable and
    needs a reset) holds instead until the GPU reports again: its first sample after
    an absence following the event (``ingest.selectors.rule_sql.XID_GONE``), however long that takes
    (looked back ``gone_forget_seconds``, 7 days).
    """

    id = "gpu_xid"
    needs = ("xids", "xid_gone")
    family = Family.GPU
    scope = ("node", "gpu")
    severity = "critical"
    params = (
        Param(
            "hardware_codes", list, HARDWARE_XIDS, "XIDs that mean hardware trouble (rule severity)"
        ),
        Param(
            "application_codes", list, APPLICATION_XIDS, "XIDs that are usually application faults"
        ),
        Param("application_severity", str, "warning", "severity of application XIDs"),
        Param("window_seconds", int, 3600, "how long an XID keeps the condition true"),
        Param(
            "gone_codes", list, GONE_XIDS, "XIDs after which the GPU is gone until it reports again"
        ),
        Param("gone_forget_seconds", int, 7 * 86400, "how far back a gone GPU is still looked for"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        hardware, application = set(p["hardware_codes"]), set(p["application_codes"])
        gone = {(x.node, x.gpu): x for x in data.xid_gone if x.code in set(p["gone_codes"])}
        by_gpu = dict(group(data.xids, _GPU_KEY))
        for key in sorted(set(by_gpu) | set(gone)):
            events = [x for x in by_gpu.get(key, []) if x.code in hardware | application]
            latest = gone.get(key)
            if latest is not None and all(x.ts != latest.ts for x in events):
                events.insert(0, XidPoint(*latest[:5]))
            if events:
                node, gpu = key
                yield self._signal(node, gpu, events, latest, hardware, settings, self.as_of(data))

    def _signal(
        self,
        node: str,
        gpu: int,
        events: list[XidPoint],
        gone: GoneXid | None,
        hardware: set[int],
        settings: RuleSettings,
        as_of: float,
    ) -> Signal:
        p = settings.params
        spans = _xid_spans(events, gone, set(p["gone_codes"]), float(p["window_seconds"]))
        times, truth = _interval_points(spans, as_of)

        def describe(i: int) -> Detail:
            active = [(x, end) for x, end in spans if x.ts <= times[i] < end]
            window = [x for x, _ in active] or [events[0]]
            worst = next((x for x in reversed(window) if x.code in hardware), window[-1])
            kind = "hardware" if worst.code in hardware else "application"
            severity = settings.severity if kind == "hardware" else p["application_severity"]
            absent = worst.code in set(p["gone_codes"])
            summary = f"XID {worst.code} ({kind}) on {node} GPU {gpu}" + (
                f": {worst.message}" if worst.message else ""
            )
            context = {
                "code": worst.code,
                "kind": kind,
                "message": worst.message,
                "at": iso(worst.ts),
                "codes": sorted({x.code for x in window}),
            }
            if absent:
                returned = gone.returned if gone is not None and gone.ts == worst.ts else None
                context |= {"gone": True, "returned_at": iso(returned) if returned else None}
                summary += " — gone until it reports again"
            return Detail(float(worst.code), summary, context, severity)

        return Signal({"node": node, "gpu": str(gpu)}, times, truth, math.inf, describe)


def _xid_spans(
    events: list[XidPoint], gone: GoneXid | None, gone_codes: set[int], window: float
) -> list[tuple[XidPoint, float]]:
    """(event, end of its condition): a window after it, or for a gone code until the GPU returns.

    The latest gone event ends when the GPU reported again (never, while it has not); an
    earlier one ends at the next event (the GPU was back to report it).
    """
    spans = []
    for i, event in enumerate(events):
        if event.code not in gone_codes:
            spans.append((event, event.ts + window))
        elif gone is not None and gone.ts == event.ts:
            spans.append((event, math.inf if gone.returned is None else gone.returned))
        else:
            nxt = events[i + 1].ts if i + 1 < len(events) else event.ts + window
            spans.append((event, nxt))
    return spans


def _interval_points(
    spans: list[tuple[XidPoint, float]], as_of: float
) -> tuple[list[float], list[bool]]:
    """The union of [start, end) intervals as points held until the next (hold = inf):
    true at each start, false at each end of the union that has passed by ``as_of``."""
    times: list[float] = []
    truth: list[bool] = []
    covered_until = -math.inf
    for event, end in sorted(spans, key=lambda span: span[0].ts):
        if event.ts > covered_until and times and covered_until <= as_of:
            times.append(covered_until)
            truth.append(False)
        times.append(event.ts)
        truth.append(True)
        covered_until = max(covered_until, end) if event.ts <= covered_until else end
    if covered_until <= as_of:
        times.append(covered_until)
        truth.append(False)
    return times, truth


@register
class NvlinkErrors(BaseRule):
    """NVLink CRC errors on a GPU: ≥ 10 data or ≥ 30 flit errors within the window (Meta's thresholds).

    Like Prometheus' ``increase(x[window]) >= threshold``, the condition stays
    true up to one window after the last error.
    """

    id = "nvlink_errors"
    needs = ("nvlink",)
    family = Family.GPU
    scope = ("node", "gpu")
    severity = "warning"
    params = (
        Param("crc_data_errors_min", float, 10.0, "CRC data errors per window that fire"),
        Param("crc_flit_errors_min", float, 30.0, "CRC flit errors per window that fire"),
        Param("window_seconds", int, 600, "the counting window"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        window = float(p["window_seconds"])
        for (node, gpu), points in group(data.nvlink, _GPU_KEY):
            sums = _window_sums(points, window)
            truth = [
                d >= p["crc_data_errors_min"] or f >= p["crc_flit_errors_min"] for d, f in sums
            ]
            if True not in truth:
                continue

            def describe(i: int, node: str = node, gpu: int = gpu, sums: list = sums) -> Detail:
                data_errors, flit_errors = sums[i]
                summary = (
                    f"NVLink errors on {node} GPU {gpu}: {data_errors:.0f} CRC data, "
                    f"{flit_errors:.0f} CRC flit in {duration(window)}"
                )
                return Detail(
                    data_errors,
                    summary,
                    {"crc_data": data_errors, "crc_flit": flit_errors, "window_seconds": window},
                )

            yield Signal(
                {"node": node, "gpu": str(gpu)}, [pt.ts for pt in points], truth, window, describe
            )


def _window_sums(points: list[NvlinkPoint], window: float) -> list[tuple[float, float]]:
    """Trailing-window sums of (crc_data, crc_flit) at each point."""
    queue: deque[NvlinkPoint] = deque()
    data_sum = flit_sum = 0.0
    sums = []
    for pt in points:
        queue.append(pt)
        data_sum += pt.crc_data
        flit_sum += pt.crc_flit
        while queue[0].ts <= pt.ts - window:
            old = queue.popleft()
            data_sum -= old.crc_data
            flit_sum -= old.crc_flit
        sums.append((data_sum, flit_sum))
    return sums
