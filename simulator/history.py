"""History mode: OpenMetrics for `promtool tsdb create-blocks-from openmetrics`.

Every sample carries the job/instance labels its live scrape would get, so backfilled blocks and
live scrapes form one series. Samples sit on multiples of `step` (or of each exporter's own scrape interval), strictly before `end`, so the
live scrape that starts at `end` neither overlaps nor leaves a gap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from simulator.model import Cluster
from simulator.render import renderer_for
from simulator.spec import Dialect
from simulator.targets import Target

# What a day of demo history needs (the full set is ~5x bigger): GPU busy/tensor/power/XID,
# per-node IB traffic/wait/errors/state, the fabric topology (treydock info series only), and
# every kube-state-metrics, Kueue and checkpoint series.
KEY_FAMILIES = frozenset(
    {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_XID_ERRORS",
        "dcgm_gpu_utilization",
        "dcgm_fi_prof_pipe_tensor_active",
        "dcgm_power_usage",
        "dcgm_xid_errors",
        "node_infiniband_port_data_transmitted_bytes_total",
        "node_infiniband_port_data_received_bytes_total",
        "node_infiniband_port_transmit_wait_total",
        "node_infiniband_rate_bytes_per_second",  # ib_congestion divides lost bytes by it
        "node_infiniband_symbol_error_total",
        "node_infiniband_link_downed_total",
        "node_infiniband_state_id",
        "infiniband_hca_info",
        "infiniband_switch_info",
        "infiniband_switch_uplink_info",
        "up",
    }
)
#: The GPU hardware-health families ("key,<these>" adds them: the hardware rules' inputs).
HEALTH_FAMILIES = (
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_DEV_ROW_REMAP_PENDING",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
)
WHOLE_DIALECTS = (Dialect.KSM, Dialect.KUEUE, Dialect.CHECKPOINTS)


@dataclass(frozen=True)
class HistoryStats:
    """What write_history produced."""

    path: Path
    samples: int
    bytes: int
    seconds: float
    first: float
    last: float


def _seconds(when: datetime | float) -> float:
    return when.timestamp() if isinstance(when, datetime) else float(when)


def family_filter(families: str) -> tuple[frozenset[str] | None, bool]:
    """(families to keep or None for all, whether ksm/kueue/checkpoints are kept whole).

    "all"; "key"; "key,NAME,..." (key plus more); or "NAME,..." (exactly those, plus `up`).
    """
    tokens = {f.strip() for f in families.split(",") if f.strip()}
    if "all" in tokens:
        return None, True
    if "key" in tokens:
        return KEY_FAMILIES | (tokens - {"key"}), True
    return frozenset(tokens | {"up"}), False


def _keep_for(target: Target, keep: frozenset[str] | None, whole: bool) -> frozenset[str] | None:
    return None if whole and target.dialect in WHOLE_DIALECTS else keep


def sample_times(start: float, end: float, step: float) -> list[float]:
    """Multiples of step in [start, end)."""
    first = math.ceil(start / step) * step
    count = max(0, math.ceil((end - first) / step))
    return [first + i * step for i in range(count)]


def write_history(
    cluster: Cluster,
    start: datetime | float,
    end: datetime | float,
    step: float = 60.0,
    out_path: str | Path = "history.om",
    families: str = "key",
    intervals: Mapping[str, float] | None = None,
) -> HistoryStats:
    """Write OpenMetrics samples for [start, end): every `step` seconds, or per exporter.

    `families`: "key" (KEY_FAMILIES plus every ksm/kueue/checkpoint series), "all",
    "key,NAME,..." (key plus those families), or "NAME,..." (only those, plus `up`).
    `intervals`: dialect → scrape interval (seconds), as ``targets.scrape_intervals`` parses
    ``--scrape-interval``; a dialect not named is sampled every `step`. Each target's
    samples sit on multiples of its own interval, as a Prometheus scrape aligned to them.

    A target whose node is down at an instant has no samples then, and its `up` series is 0.
    """
    began = time.perf_counter()
    renderer = renderer_for(cluster)
    keep, whole = family_filter(families)
    path = Path(out_path)
    groups: dict[float, list[Target]] = {}  # interval → its targets, in the renderer's order
    for target in renderer.targets:
        groups.setdefault(float((intervals or {}).get(target.dialect, step)), []).append(target)
    first, last = _seconds(start), _seconds(end)
    due: dict[float, list[Target]] = {}
    for every, members in sorted(groups.items()):
        for t in sample_times(first, last, every):
            due.setdefault(t, []).extend(members)
    times = sorted(due)
    samples = 0
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for t in times:
            stamp = f" {_stamp(t)}\n"
            chunk: list[str] = []
            for target in due[t]:
                up = renderer.is_up(target, t)
                if keep is None or "up" in keep:
                    chunk.append(f"up{{{target.extra_labels}}} {int(up)}")
                if up:
                    chunk.extend(renderer.lines(target, t, True, _keep_for(target, keep, whole)))
            samples += len(chunk)
            out.write(stamp.join(chunk))
            out.write(stamp)
        out.write("# EOF\n")
    return HistoryStats(
        path=path,
        samples=samples,
        bytes=path.stat().st_size,
        seconds=time.perf_counter() - began,
        first=times[0] if times else 0.0,
        last=times[-1] if times else 0.0,
    )


def _stamp(t: float) -> str:
    """An OpenMetrics timestamp: whole seconds as an integer, else milliseconds kept."""
    return str(int(t)) if t == int(t) else f"{t:.3f}"
