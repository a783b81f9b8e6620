"""GPU rules: tensor-core drift (the flagship), XIDs and NVLink errors."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from operator import attrgetter
from typing import Any

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, GpuPoint, NvlinkPoint, Signal, XidPoint
from .series import Allocations, duration, group, iso, streak_start

_GPU_KEY = attrgetter("node", "gpu")

HARDWARE_XIDS = [48, 63, 64, 74, 79, 92, 94, 95, 119, 120]
APPLICATION_XIDS = [13, 31, 43, 45]


@register
class TensorDrift(BaseRule):
    """GPU util says busy while the tensor cores are idle, for a sustained time, on a GPU of a run.

    A GPU stuck in a hung NCCL collective shows ~100 % util at ~70 W with idle
    tensor cores (DOMAIN.md). The condition at a step: util ≥ ``util_min`` (90 %)
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
    family = "gpu"
    scope = ("node", "gpu")
    severity = "critical"
    for_seconds = 600
    keep_firing_for_seconds = 120
    params = (
        Param("util_min", float, 90.0, "GPU util (%) at or above which the GPU counts as busy"),
        Param(
            "tensor_max",
            float,
            0.05,
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
    neither list are ignored.
    """

    id = "gpu_xid"
    needs = ("xids",)
    family = "gpu"
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
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        p = settings.params
        hardware, application = set(p["hardware_codes"]), set(p["application_codes"])
        for (node, gpu), events in group(data.xids, _GPU_KEY):
            relevant = [x for x in events if x.code in hardware or x.code in application]
            if relevant:
                yield self._signal(node, gpu, relevant, hardware, settings)

    def _signal(
        self,
        node: str,
        gpu: int,
        events: list[XidPoint],
        hardware: set[int],
        settings: RuleSettings,
    ) -> Signal:
        def describe(i: int) -> Detail:
            window = [
                x
                for x in events[: i + 1]
                if x.ts > events[i].ts - settings.params["window_seconds"]
            ]
            worst = next((x for x in reversed(window) if x.code in hardware), events[i])
            kind = "hardware" if worst.code in hardware else "application"
            severity = (
                settings.severity if kind == "hardware" else settings.params["application_severity"]
            )
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
            return Detail(float(worst.code), summary, context, severity)

        times = [x.ts for x in events]
        return Signal(
            {"node": node, "gpu": str(gpu)},
            times,
            [True] * len(times),
            float(settings.params["window_seconds"]),
            describe,
        )


@register
class NvlinkErrors(BaseRule):
    """NVLink CRC errors on a GPU: ≥ 10 data or ≥ 30 flit errors within the window (Meta's thresholds).

    Like Prometheus' ``increase(x[window]) >= threshold``, the condition stays
    true up to one window after the last error.
    """

    id = "nvlink_errors"
    needs = ("nvlink",)
    family = "gpu"
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
