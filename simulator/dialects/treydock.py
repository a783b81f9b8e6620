"""treydock/infiniband_exporter: the whole fabric from one host (HCA ports, switch ports, topology).

As collectors/hca.go and switch.go emit it: HCA series only with ``--collector.hca``
(``ExporterOptions.treydock_hca_collector``; off by default upstream); ``hca`` = the CA's
node description, rdma-core's "<host> mlx5_N" by default (or MLNX_OFED's "<host> HCA-<N+1>");
the HCA rate per CA (``infiniband_hca_rate_bytes_per_second{guid}``) and no HCA port state;
``infiniband_hca_uplink_info`` and ``infiniband_switch_uplink_info`` for the topology; one
SHARP "Mellanox Technologies Aggregation Node" CA per leaf group (a CA that is no host).
Families are written sorted by name, as client_golang does.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.counters import PORT_RATE_BYTES, PortSample
from simulator.exposition import COUNTER, GAUGE, Family, Lines, big, label_str
from simulator.spec import ExporterOptions
from simulator.topology import Node, Switch, Topology

# (suffix, attribute on the HCA side, attribute on the switch side, perfquery field)
COUNTERS: tuple[tuple[str, str, str, str], ...] = (
    ("port_transmit_data_bytes_total", "tx_bytes", "rx_bytes", "PortXmitData"),
    ("port_receive_data_bytes_total", "rx_bytes", "tx_bytes", "PortRcvData"),
    ("port_transmit_packets_total", "tx_packets", "rx_packets", "PortXmitPkts"),
    ("port_receive_packets_total", "rx_packets", "tx_packets", "PortRcvPkts"),
    ("port_transmit_wait_total", "transmit_wait", "zero", "PortXmitWait"),
    ("port_symbol_error_total", "symbol_error", "zero", "SymbolErrorCounter"),
    ("port_link_downed_total", "link_downed", "link_downed", "LinkDownedCounter"),
    (
        "port_link_error_recovery_total",
        "link_error_recovery",
        "link_error_recovery",
        "LinkErrorRecoveryCounter",
    ),
    ("port_receive_errors_total", "port_rcv_errors", "zero", "PortRcvErrors"),
    ("port_local_link_integrity_errors_total", "zero", "zero", "LocalLinkIntegrityErrors"),
    (
        "port_excessive_buffer_overrun_errors_total",
        "zero",
        "zero",
        "ExcessiveBufferOverrunErrors",
    ),
    ("port_transmit_discards_total", "zero", "zero", "PortXmitDiscards"),
)
HCA_INFO = Family("infiniband_hca_info", GAUGE, "Infiniband HCA information")
HCA_RATE = Family("infiniband_hca_rate_bytes_per_second", GAUGE, "Infiniband HCA rate")
HCA_UPLINK = Family("infiniband_hca_uplink_info", GAUGE, "Infiniband HCA uplink information")
SWITCH_INFO = Family("infiniband_switch_info", GAUGE, "Infiniband switch information")
UPLINK_INFO = Family("infiniband_switch_uplink_info", GAUGE, "Infiniband switch uplink information")
FAMILIES = [
    Family(f"infiniband_{kind}_{s}", COUNTER, f"Infiniband {label} port {field}")
    for kind, label in (("hca", "HCA"), ("switch", "switch"))
    for s, _a, _b, field in COUNTERS
] + [HCA_INFO, HCA_RATE, HCA_UPLINK, SWITCH_INFO, UPLINK_INFO]
AGGREGATION_NODE = "Mellanox Technologies Aggregation Node"
AGGREGATION_GUID = 0x946DAE0300F00000
AGGREGATION_PORT = 64  # the leaf port the aggregation node hangs off (beyond the node ports)
IDLE = PortSample(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4, 5)
Rows = dict[str, tuple[Family, list[tuple[str, str]]]]


@dataclass(frozen=True)
class Ca:
    """One channel adapter port as ibnetdiscover sees it: guid, name, lid, sample, leaf link."""

    guid: str
    name: str
    lid: int
    sample: PortSample
    switch: Switch
    switch_port: int


def hca_name(node: Node, port: int, style: str = "rdma") -> str:
    """The node description: "gpu-017 mlx5_0" (rdma-core) or "gpu-017 HCA-1" (MLNX_OFED)."""
    return f"{node.name} HCA-{port + 1}" if style == "mlnx" else f"{node.name} mlx5_{port}"


def channel_adapters(
    topology: Topology, ports: dict[str, list[PortSample]], options: ExporterOptions
) -> list[Ca]:
    """The CAs of the fabric: every rail port of a reachable node, plus the aggregation nodes."""
    cas = []
    for node in (n for n in topology.nodes if n.name in ports):
        for p, sample in enumerate(ports[node.name]):
            switch, switch_port = topology.switch_for(node, p)
            name = hca_name(node, p, options.treydock_hca_names)
            cas.append(Ca(node.hca_guids[p], name, node.hca_lids[p], sample, switch, switch_port))
    if options.treydock_aggregation_node:
        for switch in (s for s in topology.switches if s.rail == 0):
            guid = f"0x{AGGREGATION_GUID + switch.group:016x}"
            cas.append(
                Ca(guid, AGGREGATION_NODE, 30000 + switch.group, IDLE, switch, AGGREGATION_PORT)
            )
    return cas


def render(
    topology: Topology,
    ports: dict[str, list[PortSample]],
    lines: Lines,
    options: ExporterOptions | None = None,
) -> None:
    """Write the fabric exposition; `ports` maps each reachable node to its per-port samples."""
    options = options or ExporterOptions()
    cas = channel_adapters(topology, ports, options)
    rows: Rows = {}
    counters = [c for c in COUNTERS if lines.wants(f"infiniband_hca_{c[0]}")]
    if options.treydock_hca_collector:
        _hca_rows(cas, rows, counters)
    switch_counters = [c for c in COUNTERS if lines.wants(f"infiniband_switch_{c[0]}")]
    _switch_rows(topology, cas, rows, switch_counters)
    for name in sorted(rows):
        family, samples = rows[name]
        lines.family(family)
        for labels, value in sorted(samples):
            lines.sample(name, labels, value)


def _add(rows: Rows, family: Family, labels: str, value: str) -> None:
    rows.setdefault(family.name, (family, []))[1].append((labels, value))


def _counter(sample: PortSample, attr: str) -> str:
    return "0" if attr == "zero" else big(getattr(sample, attr))


def _hca_rows(cas: list[Ca], rows: Rows, counters: list[tuple[str, str, str, str]]) -> None:
    """HCA rows; only `counters` (the wanted ones: a history may keep none) are computed."""
    by_name = {f.name: f for f in FAMILIES}
    for ca in cas:
        port = label_str((("guid", ca.guid), ("port", "1")))
        for suffix, attr, _switch_attr, _field in counters:
            _add(rows, by_name[f"infiniband_hca_{suffix}"], port, _counter(ca.sample, attr))
        info = (("guid", ca.guid), ("hca", ca.name), ("lid", str(ca.lid)))
        _add(rows, HCA_INFO, label_str(info), "1")
        _add(rows, HCA_RATE, label_str((("guid", ca.guid),)), big(PORT_RATE_BYTES))
        uplink = (
            ("guid", ca.guid), ("hca", ca.name), ("port", "1"), ("uplink", ca.switch.name),
            ("uplink_guid", ca.switch.guid), ("uplink_lid", str(ca.switch.lid)),
            ("uplink_port", str(ca.switch_port)), ("uplink_type", "SW"),
        )  # fmt: skip
        _add(rows, HCA_UPLINK, label_str(uplink), "1")


def _switch_rows(
    topology: Topology, cas: list[Ca], rows: Rows, counters: list[tuple[str, str, str, str]]
) -> None:
    by_name = {f.name: f for f in FAMILIES}
    for ca in cas:
        port = label_str((("guid", ca.switch.guid), ("port", str(ca.switch_port))))
        for suffix, _attr, switch_attr, _field in counters:
            _add(
                rows, by_name[f"infiniband_switch_{suffix}"], port, _counter(ca.sample, switch_attr)
            )
        _add(rows, UPLINK_INFO, _uplink_labels(ca), "1")
    for switch in topology.switches:
        info = (("guid", switch.guid), ("lid", str(switch.lid)), ("switch", switch.name))
        _add(rows, SWITCH_INFO, label_str(info), "1")


def _uplink_labels(ca: Ca) -> str:
    return label_str(
        (
            ("guid", ca.switch.guid),
            ("port", str(ca.switch_port)),
            ("switch", ca.switch.name),
            ("uplink", ca.name),
            ("uplink_guid", ca.guid),
            ("uplink_lid", str(ca.lid)),
            ("uplink_port", "1"),
            ("uplink_type", "CA"),
        )
    )
