"""node_exporter's infiniband collector: per (device, port) counters and states of one node.

As node_exporter emits them (collector/infiniband_linux.go, fixtures/e2e-output.txt): every
RDMA device under /sys/class/infiniband, so beside the rail HCAs mlx5_0..N-1 an iWARP
``i40iw0`` (its counters read "N/A (no PMA)": info, state and rate only) and a dual-port
storage HCA; a counter exists only where its sysfs file does.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.counters import IDLE_BYTES_PER_SECOND, PORT_RATE_BYTES, PortSample
from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str
from simulator.model import NodeState
from simulator.spec import ExporterOptions

P = "node_infiniband_"
# (family name, PortSample attribute or constant, type, help)
COUNTERS: tuple[tuple[str, str, str], ...] = (
    (
        P + "port_data_received_bytes_total",
        "rx_bytes",
        "Number of data octets received on all links",
    ),
    (
        P + "port_data_transmitted_bytes_total",
        "tx_bytes",
        "Number of data octets transmitted on all links",
    ),
    (
        P + "port_packets_received_total",
        "rx_packets",
        "Number of packets received on all VLs by this port (including errors)",
    ),
    (
        P + "port_packets_transmitted_total",
        "tx_packets",
        "Number of packets transmitted on all VLs from this port (including errors)",
    ),
    (
        P + "port_transmit_wait_total",
        "transmit_wait",
        "Number of ticks during which the port had data to transmit but no data was sent during the entire tick",
    ),
    (
        P + "symbol_error_total",
        "symbol_error",
        "Number of minor link errors detected on one or more physical lanes.",
    ),
    (
        P + "link_error_recovery_total",
        "link_error_recovery",
        "Number of times the link successfully recovered from an error state.",
    ),
    (
        P + "link_downed_total",
        "link_downed",
        "Number of times the link failed to recover from an error state and went down.",
    ),
    (
        P + "port_errors_received_total",
        "port_rcv_errors",
        "Number of packets containing an error that were received on this port.",
    ),
    (
        P + "local_link_integrity_errors_total",
        "zero",
        "Number of times that the count of local physical errors exceeded the threshold specified by LocalPhyErrors.",
    ),
    (
        P + "excessive_buffer_overrun_errors_total",
        "zero",
        "Number of times that OverrunErrors consecutive flow control update periods occurred, each having at least one overrun error.",
    ),
    (
        P + "port_discards_transmitted_total",
        "zero",
        "Number of outbound packets discarded by the port because the port is down or congested.",
    ),
    (
        P + "port_receive_remote_physical_errors_total",
        "zero",
        "Number of packets marked with the EBP delimiter received on the port.",
    ),
)
STATE = Family(
    P + "state_id",
    GAUGE,
    "State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)",
)
PHYSICAL = Family(
    P + "physical_state_id",
    GAUGE,
    "Physical state of the InfiniBand port (0: no change, 1: sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link error recover, 7: phytest)",
)
RATE = Family(P + "rate_bytes_per_second", GAUGE, "Maximum signal transfer rate")
INFO = Family(
    P + "info", GAUGE, "Non-numeric data from /sys/class/infiniband/<device>, value is always 1."
)
FAMILIES = [Family(n, COUNTER, h) for n, _a, h in COUNTERS] + [STATE, PHYSICAL, RATE, INFO]
RAIL_INFO = ("MT_0000000838", "28.39.1002", "MT4129")  # board_id, firmware_version, hca_type
STORAGE_INFO = ("MT_0000000970", "28.39.1002", "MT4129")
IWARP = ("i40iw0", ("I40IW Board ID", "0.2", "I40IW"), 1.25e9)  # e2e-output.txt's device
STORAGE_RATE = 25e9  # HDR 200 Gb/s
STORAGE_SHARE = 50.0  # storage traffic: 50 x the idle chatter (about 1 MB/s)


@dataclass(frozen=True)
class Port:
    """One RDMA port as node_exporter lists it: labels, counters (None: no counter files)."""

    device: str
    port: int
    sample: PortSample | None
    rate: float

    @property
    def labels(self) -> str:
        """device/port labels."""
        return label_str((("device", self.device), ("port", str(self.port))))


def port_labels(port: int) -> str:
    """device/port labels of one rail HCA port (mlx5_<port>, port 1)."""
    return label_str((("device", f"mlx5_{port}"), ("port", "1")))


def storage_sample(state: NodeState, port: int) -> PortSample:
    """A storage HCA port: steady low traffic, no errors, active."""
    moved = IDLE_BYTES_PER_SECOND * STORAGE_SHARE * max(state.t - state.boot, 0.0) / port
    return PortSample(moved, moved, moved / 4096, moved / 4096, 0.0, 0.0, 0.0, 0.0, 0.0, 4, 5)


def node_ports(
    samples: list[PortSample], options: ExporterOptions, state: NodeState | None
) -> list[Port]:
    """Every port node_exporter lists, in its output order (device, then port)."""
    ports = [Port(f"mlx5_{p}", 1, s, PORT_RATE_BYTES) for p, s in enumerate(samples)]
    if options.node_ib_dual_port_hca and state is not None:
        device = f"mlx5_{len(samples)}"
        ports += [Port(device, n, storage_sample(state, n), STORAGE_RATE) for n in (1, 2)]
    if options.node_ib_iwarp_device:
        ports.append(Port(IWARP[0], 1, None, IWARP[2]))
    return sorted(ports, key=lambda p: (p.device, str(p.port)))


def render(
    samples: list[PortSample],
    lines: Lines,
    options: ExporterOptions | None = None,
    state: NodeState | None = None,
) -> None:
    """Write one node's infiniband collector exposition from its rail ports' samples."""
    ports = node_ports(samples, options or ExporterOptions(), state)
    counted = [p for p in ports if p.sample is not None]
    labels = [p.labels for p in counted]
    for (name, attr, _help_text), family in zip(COUNTERS, FAMILIES, strict=False):
        lines.family(family)
        if attr == "zero":
            lines.samples(name, labels, ["0"] * len(counted))
        else:
            lines.samples(name, labels, [big(getattr(p.sample, attr)) for p in counted])
    for family, attr in ((STATE, "state"), (PHYSICAL, "physical_state")):
        lines.family(family)
        lines.samples(family.name, [p.labels for p in ports], [_gauge(p, attr) for p in ports])
    lines.family(RATE)
    for port in ports:
        lines.sample(RATE.name, port.labels, big(port.rate))
    lines.family(INFO)
    for device in sorted({p.device for p in ports}):
        lines.sample(INFO.name, _info(device, len(samples)), "1")


def _gauge(port: Port, attr: str) -> str:
    if port.sample is None:  # the iWARP device: ACTIVE / LinkUp, as in node_exporter's fixture
        return "4" if attr == "state" else "5"
    return str(getattr(port.sample, attr))


def _info(device: str, rails: int) -> str:
    if device == IWARP[0]:
        board, firmware, hca = IWARP[1]
    else:
        board, firmware, hca = STORAGE_INFO if device == f"mlx5_{rails}" else RAIL_INFO
    pairs = (("board_id", board), ("device", device), ("firmware_version", firmware))
    return label_str((*pairs, ("hca_type", hca)))
