"""treydock/infiniband_exporter: the whole fabric from one host (HCA ports, switch ports, topology)."""

from __future__ import annotations

from simulator.counters import PortSample
from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str
from simulator.topology import Node, Switch, Topology

# (suffix, attribute on the HCA side, attribute on the switch side, help)
COUNTERS: tuple[tuple[str, str, str, str], ...] = (
    (
        "port_transmit_data_bytes_total",
        "tx_bytes",
        "rx_bytes",
        "Infiniband port transmit data in bytes",
    ),
    (
        "port_receive_data_bytes_total",
        "rx_bytes",
        "tx_bytes",
        "Infiniband port receive data in bytes",
    ),
    ("port_transmit_wait_total", "transmit_wait", "zero", "Infiniband port transmit wait"),
    ("port_symbol_error_total", "symbol_error", "zero", "Infiniband port symbol errors"),
    ("port_link_downed_total", "link_downed", "link_downed", "Infiniband port link downed"),
    (
        "port_link_error_recovery_total",
        "link_error_recovery",
        "link_error_recovery",
        "Infiniband port link error recovery",
    ),
    ("port_receive_errors_total", "port_rcv_errors", "zero", "Infiniband port receive errors"),
)
HCA_INFO = Family("infiniband_hca_info", GAUGE, "Infiniband HCA information")
SWITCH_INFO = Family("infiniband_switch_info", GAUGE, "Infiniband switch information")
UPLINK_INFO = Family("infiniband_switch_uplink_info", GAUGE, "Infiniband switch uplink information")
FAMILIES = [
    Family(f"infiniband_{kind}_{s}", COUNTER, h)
    for kind in ("hca", "switch")
    for s, _a, _b, h in COUNTERS
] + [HCA_INFO, SWITCH_INFO, UPLINK_INFO]


def hca_name(node: Node, port: int) -> str:
    """The HCA node description, e.g. "gpu-017 HCA-1" (maps guid to node)."""
    return f"{node.name} HCA-{port + 1}"


def render(topology: Topology, ports: dict[str, list[PortSample]], lines: Lines) -> None:
    """Write the fabric exposition; `ports` maps each reachable node to its per-port samples."""
    up_nodes = [n for n in topology.nodes if n.name in ports]
    hca_labels = {
        n.name: [
            label_str((("guid", n.hca_guids[p]), ("port", "1"))) for p in range(len(ports[n.name]))
        ]
        for n in up_nodes
    }
    for suffix, hca_attr, _switch_attr, help_text in COUNTERS:
        name = f"infiniband_hca_{suffix}"
        lines.family(Family(name, COUNTER, help_text))
        for node in up_nodes:
            for sample, label in zip(ports[node.name], hca_labels[node.name], strict=True):
                lines.sample(
                    name, label, "0" if hca_attr == "zero" else big(getattr(sample, hca_attr))
                )
    links = [
        (topology.switch_for(n, p), ports[n.name][p])
        for n in up_nodes
        for p in range(len(ports[n.name]))
    ]
    for suffix, _hca_attr, switch_attr, help_text in COUNTERS:
        name = f"infiniband_switch_{suffix}"
        lines.family(Family(name, COUNTER, help_text))
        for (switch, switch_port), sample in links:
            label = label_str((("guid", switch.guid), ("port", str(switch_port))))
            lines.sample(
                name, label, "0" if switch_attr == "zero" else big(getattr(sample, switch_attr))
            )
    _render_info(topology, up_nodes, lines)


def _render_info(topology: Topology, up_nodes: list[Node], lines: Lines) -> None:
    lines.family(HCA_INFO)
    for node in up_nodes:
        for p, guid in enumerate(node.hca_guids):
            labels = (("guid", guid), ("hca", hca_name(node, p)), ("lid", str(node.hca_lids[p])))
            lines.sample(HCA_INFO.name, label_str(labels), "1")
    lines.family(SWITCH_INFO)
    for switch in topology.switches:
        lines.sample(
            SWITCH_INFO.name,
            label_str((("guid", switch.guid), ("switch", switch.name), ("lid", str(switch.lid)))),
            "1",
        )
    lines.family(UPLINK_INFO)
    for node in topology.nodes:
        for p, guid in enumerate(node.hca_guids):
            switch, switch_port = topology.switch_for(node, p)
            lines.sample(UPLINK_INFO.name, _uplink_labels(switch, switch_port, node, p, guid), "1")


def _uplink_labels(switch: Switch, switch_port: int, node: Node, port: int, guid: str) -> str:
    return label_str(
        (
            ("guid", switch.guid),
            ("port", str(switch_port)),
            ("switch", switch.name),
            ("uplink", hca_name(node, port)),
            ("uplink_guid", guid),
            ("uplink_lid", str(node.hca_lids[port])),
            ("uplink_port", "1"),
            ("uplink_type", "CA"),
        )
    )
