"""node_exporter's infiniband collector: per (device, port) counters and states of one node."""

from __future__ import annotations

from simulator.counters import PORT_RATE_BYTES, PortSample
from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str

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


def port_labels(port: int) -> str:
    """device/port labels of one HCA port."""
    return label_str((("device", f"mlx5_{port}"), ("port", "1")))


def render(samples: list[PortSample], lines: Lines) -> None:
    """Write one node's infiniband collector exposition from its per-port samples."""
    labels = [port_labels(p) for p in range(len(samples))]
    for (name, attr, _help_text), family in zip(COUNTERS, FAMILIES, strict=False):
        lines.family(family)
        if attr == "zero":
            lines.samples(name, labels, ["0"] * len(samples))
        else:
            lines.samples(name, labels, [big(getattr(s, attr)) for s in samples])
    for family, attr in ((STATE, "state"), (PHYSICAL, "physical_state")):
        lines.family(family)
        lines.samples(family.name, labels, [str(getattr(s, attr)) for s in samples])
    lines.family(RATE)
    for label in labels:
        lines.sample(RATE.name, label, big(PORT_RATE_BYTES))
    lines.family(INFO)
    for p in range(len(samples)):
        info = (
            ("board_id", "MT_0000000838"),
            ("device", f"mlx5_{p}"),
            ("firmware_version", "28.39.1002"),
            ("hca_type", "MT4129"),
        )
        lines.sample(INFO.name, label_str(info), "1")
