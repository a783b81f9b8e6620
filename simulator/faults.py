"""Fault injection: what can go wrong, where, and when."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

TimeRef = datetime | timedelta | float | int


class FaultKind:
    """The named fault kinds (docs/simulator.md describes each one's signature and params)."""

    TENSOR_DRIFT = "tensor_drift"
    IB_SYMBOL_ERRORS = "ib_symbol_errors"
    IB_LINK_FLAP = "ib_link_flap"
    IB_CONGESTION = "ib_congestion"
    IB_STRAGGLER = "ib_straggler"
    IB_COUNTER_SATURATED = "ib_counter_saturated"
    NVLINK_ERRORS = "nvlink_errors"
    XID = "xid"
    NODE_DOWN = "node_down"
    KUEUE_STALL = "kueue_stall"
    RUN_CRASH = "run_crash"
    CHECKPOINT_STALL = "checkpoint_stall"
    POOL_FLIP = "pool_flip"
    # GPU hardware health (docs/simulator.md "Hardware faults"; docs/dcgm.md "Hardware health").
    GPU_ECC_DBE = "gpu_ecc_dbe"
    GPU_ROW_REMAP_FAILURE = "gpu_row_remap_failure"
    GPU_ROW_REMAP_PENDING = "gpu_row_remap_pending"
    GPU_THROTTLE = "gpu_throttle"
    GPU_PCIE_REPLAY = "gpu_pcie_replay"

    HARDWARE: tuple[str, ...] = (
        GPU_ECC_DBE,
        GPU_ROW_REMAP_FAILURE,
        GPU_ROW_REMAP_PENDING,
        GPU_THROTTLE,
        GPU_PCIE_REPLAY,
    )

    ALL: tuple[str, ...] = (
        TENSOR_DRIFT,
        IB_SYMBOL_ERRORS,
        IB_LINK_FLAP,
        IB_CONGESTION,
        IB_STRAGGLER,
        IB_COUNTER_SATURATED,
        NVLINK_ERRORS,
        XID,
        NODE_DOWN,
        KUEUE_STALL,
        RUN_CRASH,
        CHECKPOINT_STALL,
        POOL_FLIP,
        *HARDWARE,
    )


# Defaults for each kind's params; a Fault's params override them.
DEFAULT_PARAMS: dict[str, dict[str, Any]] = {
    FaultKind.TENSOR_DRIFT: {"power_watts": 70.0},
    FaultKind.IB_SYMBOL_ERRORS: {"rate_per_second": 0.5},
    FaultKind.IB_LINK_FLAP: {"flaps": 3, "period_seconds": 300.0, "down_seconds": 60.0},
    # lost_share: share of the port's link bandwidth lost to waiting (real units, see counters.py).
    FaultKind.IB_CONGESTION: {"throughput_factor": 0.4, "lost_share": 0.25},
    FaultKind.IB_STRAGGLER: {"throughput_factor": 0.2},
    FaultKind.IB_COUNTER_SATURATED: {"counter": "transmit_wait"},
    FaultKind.NVLINK_ERRORS: {
        "crc_flit_per_second": 0.5,
        "crc_data_per_second": 0.1,
        "replay_per_second": 0.2,
        "recovery_per_second": 0.01,
    },
    FaultKind.XID: {"code": 79},
    FaultKind.NODE_DOWN: {},
    FaultKind.KUEUE_STALL: {"arrival_seconds": 600.0},
    FaultKind.RUN_CRASH: {"restart_seconds": 240.0, "after_checkpoint_seconds": None},
    FaultKind.CHECKPOINT_STALL: {},
    FaultKind.POOL_FLIP: {},
    # The volatile DBE count the GPU holds from the fault's start until its end (the reset).
    FaultKind.GPU_ECC_DBE: {"errors": 1},
    FaultKind.GPU_ROW_REMAP_FAILURE: {},
    FaultKind.GPU_ROW_REMAP_PENDING: {},
    # DCGM_CLOCKS_EVENT_REASON_* bits set while the fault lasts (0x40: HW thermal slowdown),
    # and the SM clock the slowdown leaves (MHz).
    FaultKind.GPU_THROTTLE: {"mask": 0x40, "sm_clock_mhz": 990.0},
    FaultKind.GPU_PCIE_REPLAY: {"rate_per_second": 0.5},
}
#: XID codes after which the GPU is gone ("fallen off the bus"): it reports nothing but its XID
#: until the fault ends (the GPU is reset and returns with XID 0).
GONE_XIDS = frozenset({79})

# Faults with no end last "forever" (far past any simulated time).
FOREVER = 4.0e9


@dataclass(frozen=True)
class Fault:
    """One injected fault. Times are datetimes, or offsets (timedelta/seconds) from the epoch.

    `nodes` are node names; `gpus` GPU indices (empty: all); `ports` port indices 0..7 or device
    names "mlx5_3" (empty: all); `run` a job name; `queue` a ClusterQueue name.
    """

    kind: str
    start: TimeRef
    end: TimeRef | None = None
    nodes: Sequence[str] = ()
    gpus: Sequence[int] = ()
    ports: Sequence[int | str] = ()
    run: str | None = None
    queue: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in FaultKind.ALL:
            raise ValueError(f"unknown fault kind {self.kind!r}; known: {', '.join(FaultKind.ALL)}")


def to_seconds(when: TimeRef, epoch: float) -> float:
    """Resolve a datetime or an epoch offset to unix seconds."""
    if isinstance(when, datetime):
        return when.timestamp()
    if isinstance(when, timedelta):
        return epoch + when.total_seconds()
    return epoch + float(when)


def port_index(port: int | str) -> int:
    """0..7 from 3 or "mlx5_3"."""
    if isinstance(port, int):
        return port
    return int(str(port).rsplit("_", 1)[-1])


@dataclass(frozen=True)
class ActiveFault:
    """A fault resolved to unix seconds, with defaults merged into its params."""

    kind: str
    start: float
    end: float
    nodes: frozenset[str]
    gpus: frozenset[int]
    ports: frozenset[int]
    run: str | None
    queue: str | None
    params: Mapping[str, Any]

    def covers(self, t: float) -> bool:
        """True while the fault is active at t."""
        return self.start <= t < self.end

    def overlap(self, a: float, b: float) -> float:
        """Seconds of [a, b) inside the fault window."""
        return max(0.0, min(b, self.end) - max(a, self.start))

    def hits_gpu(self, gpu: int) -> bool:
        """True if the fault targets this GPU index (no GPUs listed: all)."""
        return not self.gpus or gpu in self.gpus

    def hits_port(self, port: int) -> bool:
        """True if the fault targets this port index (no ports listed: all)."""
        return not self.ports or port in self.ports


def resolve(fault: Fault, epoch: float) -> ActiveFault:
    """Turn a Fault into an ActiveFault anchored at the epoch (unix seconds)."""
    start = to_seconds(fault.start, epoch)
    end = FOREVER if fault.end is None else to_seconds(fault.end, epoch)
    if end < start:
        raise ValueError(f"{fault.kind}: end before start")
    return ActiveFault(
        kind=fault.kind,
        start=start,
        end=end,
        nodes=frozenset(fault.nodes),
        gpus=frozenset(fault.gpus),
        ports=frozenset(port_index(p) for p in fault.ports),
        run=fault.run,
        queue=fault.queue,
        params={**DEFAULT_PARAMS[fault.kind], **fault.params},
    )


class FaultIndex:
    """Resolved faults, indexed by kind and node for cheap lookups while rendering."""

    def __init__(self, faults: Sequence[Fault], epoch: float) -> None:
        self.all = [resolve(f, epoch) for f in faults]
        self._by_node: dict[tuple[str, str], list[ActiveFault]] = {}
        self._by_kind: dict[str, list[ActiveFault]] = {}
        for fault in self.all:
            self._by_kind.setdefault(fault.kind, []).append(fault)
            for node in fault.nodes:
                self._by_node.setdefault((fault.kind, node), []).append(fault)

    def of_kind(self, kind: str) -> list[ActiveFault]:
        """Every fault of one kind."""
        return self._by_kind.get(kind, [])

    def on_node(self, kind: str, node: str) -> list[ActiveFault]:
        """Faults of one kind that name this node."""
        return self._by_node.get((kind, node), [])

    def active_on_node(self, kind: str, node: str, t: float) -> list[ActiveFault]:
        """Faults of one kind on this node, active at t."""
        return [f for f in self._by_node.get((kind, node), ()) if f.covers(t)]
