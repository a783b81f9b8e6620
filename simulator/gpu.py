"""Per-GPU gauges and counters, derived from a node's state and its GPU faults."""

from __future__ import annotations

from dataclasses import dataclass

from simulator.faults import GONE_XIDS, ActiveFault, FaultKind
from simulator.model import P_IDLE, Cluster, NodeState
from simulator.rng import entity_key, jitter, unit
from simulator.topology import FB_TOTAL_MIB

NVLINK_BYTES_PER_IB_BYTE = 6.0
#: Bytes/s in one unit of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: DCGM's "MB/s" is NVML's KiB
#: delta per second / 1000 (NVIDIA/DCGM dcgmlib/src/DcgmCacheManager.cpp), see docs/dcgm.md.
NVLINK_BW_UNIT_BYTES = 1000 * 1024
#: Framebuffer the driver reserves (DCGM_FI_DEV_FB_RESERVED), MiB.
FB_RESERVED_MIB = 523.0
#: DCGM_CLOCKS_EVENT_REASON_GPU_IDLE / _SW_POWER_CAP (go-dcgm pkg/dcgm/dcgm_fields.h): what a
#: healthy GPU reports idle, and busy at its power limit.
CLOCKS_GPU_IDLE = 0x1
CLOCKS_SW_POWER_CAP = 0x4


@dataclass(frozen=True)
class GpuSample:
    """One GPU's dcgm-exporter fields at one instant."""

    util: float
    tensor: float
    sm_active: float
    sm_occupancy: float
    gr_engine: float
    dram: float
    fp16: float
    fp32: float
    fp64: float
    pcie_tx: float
    pcie_rx: float
    power: float
    energy_mj: float
    gpu_temp: float
    mem_temp: float
    sm_clock: float
    mem_clock: float
    fb_used: float
    fb_free: float
    xid: int
    nvlink_rate: float  # bytes/s now (DCGM publishes a rate, not a byte counter)
    nvlink_crc_flit: float
    nvlink_crc_data: float
    nvlink_replay: float
    nvlink_recovery: float
    correctable_remapped_rows: float
    mem_copy_util: float = 0.0
    fb_reserved: float = FB_RESERVED_MIB
    # Hardware health (docs/dcgm.md "Hardware health").
    ecc_dbe_vol: float = 0.0
    uncorrectable_remapped_rows: float = 0.0
    row_remap_failure: float = 0.0
    row_remap_pending: float = 0.0
    clock_events: int = 0
    pcie_replay: float = 0.0
    # Fallen off the bus (a GONE_XIDS fault): DCGM answers blank for every field, which
    # dcgm-exporter skips; only the XID field keeps its last value.
    absent: bool = False


class GpuModel:
    """Computes GpuSample values; per-GPU noise keys and constants are drawn once."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        seed, gpus = cluster.spec.seed, cluster.spec.gpus_per_node
        self.keys = [[entity_key(seed, n.index, g) for g in range(gpus)] for n in cluster.nodes]
        self.remapped = [
            [float(unit(seed, "rr", n.index, g) < 0.1) for g in range(gpus)] for n in cluster.nodes
        ]

    def sample(self, state: NodeState, gpu: int) -> GpuSample:
        """The dcgm-exporter fields of one GPU at the state's instant."""
        name, t = state.node.name, state.t
        faults = self.cluster.faults
        key = self.keys[state.node.index][gpu]
        noise = jitter(key, state.tick)
        drift = _first(faults.active_on_node(FaultKind.TENSOR_DRIFT, name, t), gpu)
        act, level = state.activity, state.tensor_level
        if drift is not None:
            util, tensor, sm, power = (
                100.0 - 0.2 * abs(noise),
                0.002 + 0.002 * abs(noise),
                0.02,
                float(drift.params["power_watts"]) + 3 * noise,
            )
        else:
            util = _util(state, noise)
            tensor = max(0.0, level * act * (1 + 0.04 * noise))
            sm = min(1.0, tensor * 1.35 + 0.04 * act)
            power = P_IDLE + (state.power_busy - P_IDLE) * act + 6 * noise
        _, _moved, extra_j = self.cluster.since_boot(state)
        energy = (P_IDLE * (t - state.boot) + extra_j + self._drift_energy(state, gpu)) * 1000
        busy = act > 0 or drift is not None
        fb_used = (72000.0 if state.run else 41000.0) if state.pod and busy else 0.0
        health = self._health(state, gpu, busy, noise)
        sm_clock = health.pop("sm_clock", 1980.0 if busy else 345.0)
        return GpuSample(
            util=util,
            tensor=tensor,
            sm_active=sm,
            sm_occupancy=sm * 0.45,
            gr_engine=util / 100 * 0.99,
            dram=0.01 if drift else min(1.0, 0.3 * act + 0.05 * act * noise),
            fp16=tensor * 0.08,
            fp32=0.02 * act,
            fp64=0.0,
            pcie_tx=1.0e7 + 2.5e9 * act * (1 + 0.05 * noise),
            pcie_rx=1.2e7 + 2.2e9 * act * (1 - 0.05 * noise),
            power=power,
            energy_mj=energy,
            gpu_temp=31.0 + 0.075 * (power - P_IDLE) + noise,
            mem_temp=35.0 + 0.08 * (power - P_IDLE) + noise,
            sm_clock=sm_clock,  # type: ignore[arg-type]
            mem_clock=2619.0,
            fb_used=fb_used,
            fb_free=FB_TOTAL_MIB - FB_RESERVED_MIB - fb_used,
            xid=self._xid(state, gpu),
            nvlink_rate=NVLINK_BYTES_PER_IB_BYTE * state.bandwidth * act,
            **self._nvlink_errors(state, gpu),  # type: ignore[arg-type]
            correctable_remapped_rows=self.remapped[state.node.index][gpu],
            mem_copy_util=min(100.0, 100.0 * (0.01 if drift else 0.3 * act)),
            **health,  # type: ignore[arg-type]
        )

    def _health(self, state: NodeState, gpu: int, busy: bool, noise: float) -> dict[str, object]:
        """The hardware-health fields: healthy unless a hardware fault hits this GPU."""
        faults, name, t = self.cluster.faults, state.node.name, state.t

        def active(kind: str) -> list[ActiveFault]:
            return [f for f in faults.active_on_node(kind, name, t) if f.hits_gpu(gpu)]

        # A busy GPU sits at its power limit about half the time; an idle one reports idle.
        clocks = (CLOCKS_SW_POWER_CAP if noise > 0.0 else 0) if busy else CLOCKS_GPU_IDLE
        health: dict[str, object] = {"clock_events": clocks}
        for fault in active(FaultKind.GPU_THROTTLE):
            health["clock_events"] = clocks | int(fault.params["mask"])
            health["sm_clock"] = float(fault.params["sm_clock_mhz"])
        if dbe := active(FaultKind.GPU_ECC_DBE):
            health["ecc_dbe_vol"] = float(sum(int(f.params["errors"]) for f in dbe))
        if active(FaultKind.GPU_ROW_REMAP_FAILURE):
            health["row_remap_failure"] = 1.0
        if active(FaultKind.GPU_ROW_REMAP_PENDING):
            health["row_remap_pending"] = 1.0
        remaps = faults.on_node(FaultKind.GPU_ROW_REMAP_PENDING, name)
        health["uncorrectable_remapped_rows"] = float(
            sum(1 for f in remaps if f.hits_gpu(gpu) and f.start <= t)
        )
        replays = 0.0
        for fault in faults.on_node(FaultKind.GPU_PCIE_REPLAY, name):
            if fault.hits_gpu(gpu):
                replays += int(
                    float(fault.params["rate_per_second"]) * fault.overlap(state.boot, t)
                )
        health["pcie_replay"] = replays
        gone = faults.active_on_node(FaultKind.XID, name, t)
        health["absent"] = any(f.hits_gpu(gpu) and int(f.params["code"]) in GONE_XIDS for f in gone)
        return health

    def _drift_energy(self, state: NodeState, gpu: int) -> float:
        joules = 0.0
        for fault in self.cluster.faults.on_node(FaultKind.TENSOR_DRIFT, state.node.name):
            lo, hi = max(state.boot, fault.start), min(state.t, fault.end)
            if hi > lo and fault.hits_gpu(gpu):
                normal = P_IDLE * (hi - lo) + self.cluster.integral(state.node, lo, hi)[2]
                joules += float(fault.params["power_watts"]) * (hi - lo) - normal
        return joules

    def _xid(self, state: NodeState, gpu: int) -> int:
        code = 0
        for fault in self.cluster.faults.active_on_node(FaultKind.XID, state.node.name, state.t):
            if fault.hits_gpu(gpu):
                code = int(fault.params["code"])
        return code

    def _nvlink_errors(self, state: NodeState, gpu: int) -> dict[str, float]:
        totals = dict.fromkeys(
            ("nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery"), 0.0
        )
        for fault in self.cluster.faults.on_node(FaultKind.NVLINK_ERRORS, state.node.name):
            overlap = fault.overlap(state.boot, state.t)
            if overlap and fault.hits_gpu(gpu):
                p = fault.params
                totals["nvlink_crc_flit"] += int(float(p["crc_flit_per_second"]) * overlap)
                totals["nvlink_crc_data"] += int(float(p["crc_data_per_second"]) * overlap)
                totals["nvlink_replay"] += int(float(p["replay_per_second"]) * overlap)
                totals["nvlink_recovery"] += int(float(p["recovery_per_second"]) * overlap)
        return totals


def _first(faults: list[ActiveFault], gpu: int) -> ActiveFault | None:
    for fault in faults:
        if fault.hits_gpu(gpu):
            return fault
    return None


def _util(state: NodeState, noise: float) -> float:
    if state.activity <= 0:
        return 0.0
    if state.run is None:  # inference: util follows load
        return min(100.0, 100 * state.activity + 4 * noise)
    if state.activity < 1:  # checkpoint write: GPUs mostly wait on storage
        return 30.0 + 8 * noise
    return 98.5 + 1.5 * noise
