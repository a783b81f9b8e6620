"""Per-port InfiniBand counters and states, derived from a node's state and its IB faults."""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.faults import ActiveFault, FaultKind
from simulator.model import Cluster, NodeState
from simulator.rng import unit
from simulator.topology import Node

SATURATED = 4294967295.0  # a 32-bit IB counter (PortXmitWait in sysfs) sticks here
#: IBA PortCounters widths in bits, as Linux exposes them in sysfs (drivers/infiniband/core/
#: sysfs.c PORT_PMA_ATTR): a counter saturates at 2^width - 1 instead of wrapping. Data and
#: packets are 64-bit (PortCountersExtended) on every HCA simulated here: they never peg.
WIDTH_BITS = {
    "symbol_error": 16,
    "port_rcv_errors": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "local_link_integrity": 4,
    "excessive_buffer_overrun": 4,
    # node_exporter's sysfs port_xmit_wait is 32-bit: the ib_counter_saturated fault pegs it
    # there. Its everyday values are modelled as the 64-bit extended counter (transmit_wait()
    # below): a real 32-bit one pegs within hours on a busy NDR port (docs/infiniband.md).
    "transmit_wait": 32,
    "tx_bytes": 64,
    "rx_bytes": 64,
    "tx_packets": 64,
    "rx_packets": 64,
}


def pegged(counter: str) -> float:
    """The value ``counter`` (a PortSample attribute) sticks at: 2^width - 1."""
    return float(2 ** WIDTH_BITS[counter] - 1)


IDLE_BYTES_PER_SECOND = 2.0e4  # subnet management and monitoring chatter on an idle port
BYTES_PER_PACKET = 3900.0
PORT_RATE_BYTES = 50e9  # NDR: 400 Gb/s
# xmit_wait in NVIDIA Quantum-family units: one increment per 8 bytes the port could not send
# (ibdiagnet manual, "Congestion assessment on InfiniBand links": lost bytes = counter x (tick+1),
# tick = 7). Modelled as the 64-bit PortXmitWait that perfquery -x reads where the hardware has
# the additional extended counters (treydock's fixtures: CapMask2 0x2); see docs/simulator.md.
BYTES_PER_WAIT_INCREMENT = 8.0
# Bytes lost to waiting per byte sent, on a healthy busy fabric: the order of what a real switch
# shows (treydock/infiniband_exporter collectors/fixtures/perfquery/0x7cfe9003009ce5b0.out, port 1:
# 22,730,501 increments x 128 B (Switch-IB: 32 B x 4 lanes) / (36,298,026,860,928 x 4 B) = 2.0e-5).
LOAD_LOST_PER_BYTE = 2.0e-5
STATE_ACTIVE, STATE_DOWN = 4, 1
PHYS_LINKUP, PHYS_POLLING = 5, 2
IB_FAULTS = (
    FaultKind.IB_SYMBOL_ERRORS,
    FaultKind.IB_LINK_FLAP,
    FaultKind.IB_CONGESTION,
    FaultKind.IB_STRAGGLER,
    FaultKind.IB_COUNTER_SATURATED,
)


@dataclass(frozen=True)
class PortSample:
    """One HCA port's counters (cumulative since the node's boot) and states."""

    tx_bytes: float
    rx_bytes: float
    tx_packets: float
    rx_packets: float
    transmit_wait: float
    symbol_error: float
    link_error_recovery: float
    link_downed: float
    port_rcv_errors: float
    state: int
    physical_state: int


def flap_windows(fault: ActiveFault) -> list[tuple[float, float]]:
    """The [down, up) intervals of an ib_link_flap fault."""
    period = float(fault.params["period_seconds"])
    down = float(fault.params["down_seconds"])
    windows = []
    for i in range(int(fault.params["flaps"])):
        start = fault.start + i * period
        if start >= fault.end:
            break
        windows.append((start, min(start + down, fault.end)))
    return windows


class PortModel:
    """Computes PortSample values; per-port constants are drawn once."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        seed, gpus = cluster.spec.seed, cluster.spec.gpus_per_node
        self.share = [
            [(_share(seed, "tx", n.index, p), _share(seed, "rx", n.index, p)) for p in range(gpus)]
            for n in cluster.nodes
        ]

    def _faults(self, state: NodeState, port: int) -> list[ActiveFault]:
        found = []
        for kind in IB_FAULTS:
            for fault in self.cluster.faults.on_node(kind, state.node.name):
                if fault.hits_port(port) and fault.start < state.t:
                    found.append(fault)
        return found

    def sample(self, state: NodeState, port: int) -> PortSample:
        """The counters of one port (0-based index: mlx5_<port>) at the state's instant."""
        faults = self._faults(state, port)
        raw = self._raw(state, port, state.t, faults)
        for fault in faults:
            if fault.kind == FaultKind.IB_COUNTER_SATURATED:
                raw = self._saturate(state, port, raw, fault, faults)
        return raw

    def _raw(self, state: NodeState, port: int, t: float, faults: list[ActiveFault]) -> PortSample:
        node, boot = state.node, state.boot
        if t == state.t:
            moved = self.cluster.since_boot(state)[1]
        else:
            moved = self.cluster.integral(node, boot, t)[1]
        lost = symbols = downs = 0.0
        is_down = False
        for fault in faults:
            moved -= self._lost_bytes(fault, node, boot, t)
            overlap = fault.overlap(boot, t)
            if fault.kind == FaultKind.IB_CONGESTION:
                lost += float(fault.params["lost_share"]) * PORT_RATE_BYTES * overlap
            elif fault.kind == FaultKind.IB_SYMBOL_ERRORS:
                symbols += float(fault.params["rate_per_second"]) * overlap
            elif fault.kind == FaultKind.IB_LINK_FLAP:
                for down, up in flap_windows(fault):
                    downs += boot <= down < t
                    is_down = is_down or down <= t < up
        tx_share, rx_share = self.share[node.index][port]
        idle = IDLE_BYTES_PER_SECOND * (t - boot)
        tx, rx = idle + moved * tx_share, idle + moved * rx_share
        return PortSample(
            tx_bytes=tx,
            rx_bytes=rx,
            tx_packets=tx / BYTES_PER_PACKET,
            rx_packets=rx / BYTES_PER_PACKET,
            transmit_wait=transmit_wait(tx, lost),
            symbol_error=min(pegged("symbol_error"), symbols),
            link_error_recovery=min(pegged("link_error_recovery"), 2 * downs),
            link_downed=min(pegged("link_downed"), downs),
            port_rcv_errors=min(pegged("port_rcv_errors"), symbols * 0.05),
            state=STATE_DOWN if is_down else STATE_ACTIVE,
            physical_state=PHYS_POLLING if is_down else PHYS_LINKUP,
        )

    def _lost_bytes(self, fault: ActiveFault, node: Node, boot: float, t: float) -> float:
        """Bytes the fault kept off the wire between boot and t."""
        cluster = self.cluster
        if fault.kind in (FaultKind.IB_CONGESTION, FaultKind.IB_STRAGGLER):
            lo, hi = max(boot, fault.start), min(t, fault.end)
            factor = float(fault.params["throughput_factor"])
            return (1.0 - factor) * cluster.integral(node, lo, hi)[1]
        if fault.kind == FaultKind.IB_LINK_FLAP:
            lost = 0.0
            for down, up in flap_windows(fault):
                lost += cluster.integral(node, max(boot, down), min(t, up))[1]
            return lost
        return 0.0

    def _saturate(
        self,
        state: NodeState,
        port: int,
        raw: PortSample,
        fault: ActiveFault,
        faults: list[ActiveFault],
    ) -> PortSample:
        counter = str(fault.params["counter"])
        if fault.covers(state.t):
            return _with(raw, counter, pegged(counter))
        if fault.end <= state.boot or fault.end > state.t:
            return raw
        # Cleared when the fault ended (perfquery -R): the counter restarts from zero there.
        before = self._raw(state, port, fault.end, faults)
        return _with(raw, counter, getattr(raw, counter) - getattr(before, counter))


def transmit_wait(tx_bytes: float, fault_lost_bytes: float) -> float:
    """PortXmitWait since boot: load-driven wait (even on every busy port) plus a fault's, in increments."""
    return (tx_bytes * LOAD_LOST_PER_BYTE + fault_lost_bytes) / BYTES_PER_WAIT_INCREMENT


def _with(sample: PortSample, counter: str, value: float) -> PortSample:
    return replace(sample, **{counter: value})


def _share(seed: int, direction: str, node: int, port: int) -> float:
    return 0.97 + 0.06 * unit(seed, direction, node, port)
