"""GPU hardware health beyond XIDs: uncorrectable ECC, row remapping, throttling, PCIe replays.

Inputs are the dcgm-exporter fields of docs/dcgm.md "Hardware health", read as sparse rows
(``ingest.selectors.rule_sql.GPU_HEALTH``: only steps where something is wrong). Each rule names the
next step in its context (``verdict``, ``next_step``); ``alerts.hardware`` turns a node's
firing hardware alerts into one verdict. Thresholds come from NVIDIA DCGM's own health
checks (NVIDIA/DCGM ``modules/health/DcgmHealthWatch.cpp``, ``common/DcgmGPUHardwareLimits.h``,
``dcgmlib/dcgm_errors.h``; commits in docs/dcgm.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from operator import attrgetter
from typing import Any

from ingest.models.choices import Family

from .base import BaseRule, Param, RuleSettings, register
from .data import Detail, EvaluationData, GpuHealthPoint, Signal
from .series import Allocations, duration, group, iso, streak_start

_GPU_KEY = attrgetter("node", "gpu")

#: DCGM_CLOCKS_EVENT_REASON_* bits (go-dcgm pkg/dcgm/dcgm_fields.h, 1:1 NVML's
#: nvmlClocksEventReason*), named as dcgm-exporter's clock_event label names them
#: (internal/pkg/collector/clock_events_collector.go).
CLOCK_EVENT_REASONS = {
    0x001: "gpu_idle",
    0x002: "clocks_setting",
    0x004: "power_cap",
    0x008: "hw_slowdown",
    0x010: "sync_boost",
    0x020: "sw_thermal",
    0x040: "hw_thermal",
    0x080: "hw_power_brake",
    0x100: "display_clocks",
}
#: Thermal (SW 0x20, HW 0x40), hardware slowdown (0x08) and the external power brake (0x80).
THROTTLE_MASK = 0x20 | 0x40 | 0x08 | 0x80


class Verdict:
    """What a hardware alert says about its GPU (docs/alerts.md "Hardware verdict")."""

    HEALTHY = "healthy"
    DEGRADED = "degraded"
    NEEDS_RESET = "needs_reset"
    NEEDS_RMA = "needs_rma"


def reasons(mask: int) -> list[str]:
    """The names of the clock-event bits set in ``mask``."""
    return [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]


class _FlagRule(BaseRule):
    """A GPU whose health field says so at a step (``truth`` of a row); holds while it keeps saying so.

    Override points: ``id``, ``severity``, ``verdict``, ``next_step``, ``flagged()``,
    ``describe()``. Rows are sparse, so the condition ends a sample gap after the last
    flagged row: when the GPU reports healthy again (or stops reporting).
    """

    needs = ("gpu_health",)
    family = Family.GPU
    scope = ("node", "gpu")
    verdict = Verdict.DEGRADED
    next_step = ""

    def flagged(self, pt: GpuHealthPoint, settings: RuleSettings) -> bool:
        """Mandatory: whether the row shows the fault."""
        raise NotImplementedError

    def describe(self, pt: GpuHealthPoint) -> tuple[float, str, dict[str, Any]]:
        """Mandatory: (value, summary, context) of a flagged row."""
        raise NotImplementedError

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        for (node, gpu), rows in group(data.gpu_health, _GPU_KEY):
            points = [pt for pt in rows if self.flagged(pt, settings)]
            if points:
                yield self._signal(node, gpu, points, data.max_gap)

    def _signal(self, node: str, gpu: int, points: list[GpuHealthPoint], gap: float) -> Signal:
        def describe(i: int) -> Detail:
            value, summary, context = self.describe(points[i])
            return Detail(value, summary, self._context(context, points[i].ts))

        times = [pt.ts for pt in points]
        return Signal({"node": node, "gpu": str(gpu)}, times, [True] * len(times), gap, describe)

    def _context(self, context: dict[str, Any], ts: float) -> dict[str, Any]:
        return {**context, "at": iso(ts), "verdict": self.verdict, "next_step": self.next_step}


@register
class GpuEccDbe(_FlagRule):
    """A GPU counted uncorrectable (double-bit) ECC errors since its last reset: reset it.

    ``DCGM_FI_DEV_ECC_DBE_VOL_TOTAL`` is the volatile count: it returns to 0 only when the
    driver reloads, so the condition holds from the first error until the GPU is reset.
    Any error counts: DCGM's memory health watch fails a GPU on one volatile DBE
    (``DCGM_FR_VOLATILE_DBE_DETECTED``), and its next step is "Drain the GPU and reset it
    or reboot the node" (``DCGM_FR_VOLATILE_DBE_DETECTED_NEXT``, dcgmlib/dcgm_errors.h).
    """

    id = "gpu_ecc_dbe"
    severity = "critical"
    verdict = Verdict.NEEDS_RESET
    next_step = "Drain the node and reset the GPU (or reboot the node)."

    def flagged(self, pt: GpuHealthPoint, settings: RuleSettings) -> bool:
        return pt.ecc_dbe_vol > 0

    def describe(self, pt: GpuHealthPoint) -> tuple[float, str, dict[str, Any]]:
        summary = f"{pt.ecc_dbe_vol:.0f} uncorrectable ECC error(s) on {pt.node} GPU {pt.gpu} since its last reset"
        return pt.ecc_dbe_vol, summary, {"errors": pt.ecc_dbe_vol}


@register
class GpuRowRemapFailure(_FlagRule):
    """Row remapping failed on a GPU: its memory is damaged beyond repair in the field (RMA).

    ``DCGM_FI_DEV_ROW_REMAP_FAILURE`` (on in the default CSV). DCGM classes
    ``DCGM_FR_ROW_REMAP_FAILURE`` as ``DCGM_ERROR_ISOLATE`` and says "Row remapping failure
    indicates unrecoverable memory hardware damage" (dcgmlib/dcgm_errors.h): the GPU has no
    spare rows left, so a reset does not help; it goes back to the vendor.
    """

    id = "gpu_row_remap_failure"
    severity = "critical"
    verdict = Verdict.NEEDS_RMA
    next_step = "Take the node out of service and open an RMA for the GPU."

    def flagged(self, pt: GpuHealthPoint, settings: RuleSettings) -> bool:
        return pt.row_remap_failure > 0

    def describe(self, pt: GpuHealthPoint) -> tuple[float, str, dict[str, Any]]:
        return 1.0, f"Row remapping failed on {pt.node} GPU {pt.gpu}: memory damaged, RMA", {}


@register
class GpuRowRemapPending(_FlagRule):
    """A GPU has row remaps waiting for a reset: until then the bad rows are still in use.

    ``DCGM_FI_DEV_ROW_REMAP_PENDING`` (field 396; add it to the CSV). The remap is applied
    at the next GPU reset; DCGM's diagnostic fails a GPU with pending remaps
    (``DCGM_FR_PENDING_ROW_REMAP``, ``DCGM_ERROR_ISOLATE``). A warning: the GPU still works,
    and a reset at the next drain fixes it.
    """

    id = "gpu_row_remap_pending"
    severity = "warning"
    verdict = Verdict.NEEDS_RESET
    next_step = "Reset the GPU at the next drain to apply the pending row remaps."

    def flagged(self, pt: GpuHealthPoint, settings: RuleSettings) -> bool:
        return pt.row_remap_pending > 0

    def describe(self, pt: GpuHealthPoint) -> tuple[float, str, dict[str, Any]]:
        return 1.0, f"Row remaps pending on {pt.node} GPU {pt.gpu}: reset to apply them", {}


@register
class GpuThrottle(BaseRule):
    """A GPU of a run throttled by heat, hardware slowdown or the power brake for ``for`` = 5 min.

    ``DCGM_FI_DEV_CLOCKS_EVENT_REASONS`` (field 112, formerly ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS``)
    is a bitmask of ``DCGM_CLOCKS_EVENT_REASON_*`` (go-dcgm pkg/dcgm/dcgm_fields.h, NVML's
    ``nvmlClocksEventReason*``). ``reasons_mask`` (232) = SW thermal 0x20 | HW thermal 0x40 |
    HW slowdown 0x08 | HW power brake 0x80: the reasons DCGM's health checks report as
    thermal or power violations. SW power cap (0x04) is left out: a busy H100/H200 sits at
    its power limit as a matter of course. Sustained 5 min on a GPU of a run: one slow GPU
    holds back every rank of a synchronous job, yet a short clock change is no fault.
    """

    id = "gpu_throttle"
    needs = ("gpu_health", "assignments")
    family = Family.GPU
    scope = ("node", "gpu")
    severity = "warning"
    for_seconds = 300
    keep_firing_for_seconds = 60
    params = (
        Param("reasons_mask", int, THROTTLE_MASK, "clock-event bits that count as throttling"),
        Param("require_run", bool, True, "only GPUs of nodes that hold a run's pod"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        mask = int(settings.params["reasons_mask"])
        runs = Allocations(data.assignments, data.max_gap)
        for (node, gpu), rows in group(data.gpu_health, _GPU_KEY):
            points = [pt for pt in rows if pt.clock_events & mask]
            if settings.params["require_run"]:
                points = [pt for pt in points if runs.at(node, pt.ts) is not None]
            if points:
                yield self._signal(node, gpu, points, mask, runs, data.max_gap)

    def _signal(self, node: str, gpu: int, points: list[GpuHealthPoint], mask: int,
                runs: Allocations, gap: float) -> Signal:  # fmt: skip
        times = [pt.ts for pt in points]
        truth = [True] * len(points)

        def describe(i: int) -> Detail:
            pt, run = points[i], runs.at(node, points[i].ts)
            held = pt.ts - streak_start(times, truth, i, gap)
            named = reasons(pt.clock_events & mask)
            summary = f"GPU {gpu} on {node} throttled ({', '.join(named)}) for {duration(held)}" + (
                f" (run {run.namespace}/{run.run})" if run else ""
            )
            context = {
                "reasons": named,
                "clock_events": pt.clock_events,
                "held_seconds": held,
                "namespace": run.namespace if run else None,
                "run": run.run if run else None,
                "at": iso(pt.ts),
                "verdict": Verdict.DEGRADED,
                "next_step": "Check the node's cooling and power supply; drain it if it persists.",
            }
            return Detail(float(pt.clock_events & mask), summary, context)

        return Signal({"node": node, "gpu": str(gpu)}, times, truth, gap, describe)


@register
class GpuPcieReplay(BaseRule):
    """A GPU's PCIe link replays more than 8 times a minute over ``window_seconds`` (5 min).

    ``DCGM_FI_DEV_PCIE_REPLAY_COUNTER`` (on in the default CSV). 8 replays per minute is
    ``DCGM_LIMIT_MAX_PCIREPLAY_RATE`` ("the maximum recommended by RM",
    common/DcgmGPUHardwareLimits.h), the rate DCGM's PCIe health watch fails a GPU at
    (``DCGM_FR_PCI_REPLAY_RATE``); its next step is to reseat the card and check the
    slot and riser. Like ``increase(x[5m])``, the condition stays true up to one window
    after the last replays.
    """

    id = "gpu_pcie_replay"
    needs = ("gpu_health",)
    family = Family.GPU
    scope = ("node", "gpu")
    severity = "warning"
    params = (
        Param("replays_per_minute_max", float, 8.0, "PCIe replays per minute above which it fires"),
        Param("window_seconds", int, 300, "the window the rate is taken over"),
    )

    def signals(self, data: EvaluationData, settings: RuleSettings) -> Iterator[Signal]:
        limit = float(settings.params["replays_per_minute_max"])
        window = float(settings.params["window_seconds"])
        for (node, gpu), rows in group(data.gpu_health, _GPU_KEY):
            points = [pt for pt in rows if pt.pcie_replay > 0]
            sums = _window_sums(points, window, attrgetter("pcie_replay"))
            truth = [total * 60.0 / window > limit for total in sums]
            if True in truth:
                yield self._signal(node, gpu, points, sums, truth, window)

    def _signal(self, node: str, gpu: int, points: list[GpuHealthPoint], sums: list[float],
                truth: list[bool], window: float) -> Signal:  # fmt: skip
        def describe(i: int) -> Detail:
            rate = sums[i] * 60.0 / window
            summary = f"PCIe replays on {node} GPU {gpu}: {rate:.1f}/min over {duration(window)}"
            context = {
                "replays": sums[i],
                "per_minute": rate,
                "window_seconds": window,
                "at": iso(points[i].ts),
                "verdict": Verdict.DEGRADED,
                "next_step": "Reseat the GPU and check its PCIe slot and riser at the next drain.",
            }
            return Detail(rate, summary, context)

        return Signal(
            {"node": node, "gpu": str(gpu)}, [pt.ts for pt in points], truth, window, describe
        )


def _window_sums(
    points: list[GpuHealthPoint], window: float, value: Callable[[GpuHealthPoint], float]
) -> list[float]:
    """Trailing-window sums of ``value`` at each point."""
    queue: deque[GpuHealthPoint] = deque()
    total = 0.0
    sums = []
    for pt in points:
        queue.append(pt)
        total += value(pt)
        while queue[0].ts <= pt.ts - window:
            total -= value(queue.popleft())
        sums.append(total)
    return sums
