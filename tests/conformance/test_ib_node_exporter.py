"""node_exporter's infiniband collector, as it really emits, through a real Prometheus into ingest.

Fixtures: ib_node_exporter_e2e.prom (node_exporter's own e2e-output.txt block, verbatim: an
iWARP i40iw0 with no counters, a dual-port mlx4_0 whose port 2 lacks most counter files,
port_xmit_wait pegged at 2^32-1) and ib_node_exporter_mlx5.prom (a current node: narrow
error counters pegged at their kernel widths, a dual-port mlx5_1 with port 2 down).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from alerts.models import Alert
from alerts.services import evaluate
from ingest.models import IbHotSample, IbPort
from tests.conformance.ib_history import (
    EPOCH,
    FIXTURES,
    STEP,
    backfilled,
    by_series,
    go_float,
    ingest_fixture_history,
    openmetrics,
    parse,
)
from tests.support.prometheus import PrometheusProcess

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
SCRAPES = 5
NE = "node_infiniband_"
E2E_DELTAS = {
    (NE + "port_data_transmitted_bytes_total", "mlx4_0", "1"): 3.0e6,
    (NE + "port_data_received_bytes_total", "mlx4_0", "1"): 6.0e6,
    (NE + "port_packets_transmitted_total", "mlx4_0", "1"): 1500.0,
    (NE + "port_packets_received_total", "mlx4_0", "1"): 3000.0,
    (NE + "port_data_transmitted_bytes_total", "mlx4_0", "2"): 300.0,
}
MLX5_DELTAS = {
    (NE + "port_data_transmitted_bytes_total", "mlx5_0", "1"): 30.0e9,
    (NE + "port_data_received_bytes_total", "mlx5_0", "1"): 15.0e9,
    (NE + "port_packets_transmitted_total", "mlx5_0", "1"): 7.5e6,
    (NE + "port_packets_received_total", "mlx5_0", "1"): 3.75e6,
    (NE + "port_transmit_wait_total", "mlx5_0", "1"): 3000.0,
    (NE + "link_error_recovery_total", "mlx5_0", "1"): 1.0,
    (NE + "port_errors_received_total", "mlx5_0", "1"): 2.0,
    (NE + "port_data_transmitted_bytes_total", "mlx5_1", "1"): 3.0e6,
}


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    workdir = tmp_path_factory.mktemp("ib_node_exporter")
    e2e = openmetrics(
        FIXTURES / "ib_node_exporter_e2e.prom",
        "node",
        "ne-e2e:9100",
        SCRAPES,
        by_series(E2E_DELTAS),
    )
    mlx5 = openmetrics(
        FIXTURES / "ib_node_exporter_mlx5.prom",
        "node",
        "gpu-017:9100",
        SCRAPES,
        by_series(MLX5_DELTAS),
    )
    with backfilled(workdir, e2e, mlx5) as process:
        yield process


@pytest.fixture
def ingested(prom: PrometheusProcess, settings, monkeypatch: pytest.MonkeyPatch) -> list:  # noqa: ANN001
    return ingest_fixture_history(prom, settings, monkeypatch, SCRAPES, ["ib"])


def sample(node: str, device: str, port: int, k: int) -> IbHotSample:
    return IbHotSample.objects.get(
        port__node__name=node, port__device=device, port__port=port, ts=at(EPOCH + k * STEP)
    )


def test_fixture_lines_are_in_node_exporters_format() -> None:
    for name in ("ib_node_exporter_e2e.prom", "ib_node_exporter_mlx5.prom"):
        samples = parse(FIXTURES / name)
        names = [s.name for s in samples]
        assert names == sorted(names), name  # families sorted, as the Go gatherer writes them
        for s in samples:
            keys = [k for k, _ in s.labels]
            expected = (
                ["board_id", "device", "firmware_version", "hca_type"]
                if s.name == NE + "info"
                else ["device", "port"]
            )
            assert keys == expected, s
            assert s.text == go_float(s.value), s


def test_only_ports_with_ib_counters_are_ib_ports(ingested: list) -> None:
    assert set(IbPort.objects.values_list("node__name", "device", "port", "guid")) == {
        ("ne-e2e", "mlx4_0", 1, ""),
        ("ne-e2e", "mlx4_0", 2, ""),
        ("gpu-017", "mlx5_0", 1, ""),
        ("gpu-017", "mlx5_1", 1, ""),
        ("gpu-017", "mlx5_1", 2, ""),
    }
    assert "skipped devices no_ib_counters=1" in ingested[0].notes  # i40iw0


def test_stored_values_are_exact_and_missing_counters_are_null(ingested: list) -> None:
    port1 = sample("ne-e2e", "mlx4_0", 1, 2)
    values = (
        port1.tx_bytes, port1.rx_bytes, port1.tx_packets, port1.rx_packets, port1.xmit_wait,
        port1.symbol_errors, port1.link_downed, port1.link_error_recovery, port1.rcv_errors,
        port1.local_link_integrity, port1.excessive_buffer_overrun, port1.rate, port1.state,
        port1.phys_state, port1.saturated,
    )  # fmt: skip
    # port_xmit_wait is pegged at 2^32-1 in node_exporter's fixture: NULL and bit 4 (16).
    assert values == (1.0e5, 2.0e5, 50.0, 100.0, None, None, 0.0, 0.0, 0.0, None, None,
                      5.0e9, 4, 5, 16)  # fmt: skip
    port2 = sample("ne-e2e", "mlx4_0", 2, 2)
    values = (
        port2.tx_bytes, port2.rx_bytes, port2.tx_packets, port2.rx_packets, port2.xmit_wait,
        port2.symbol_errors, port2.link_downed, port2.link_error_recovery, port2.rcv_errors,
        port2.local_link_integrity, port2.excessive_buffer_overrun, port2.saturated,
    )  # fmt: skip
    assert values == (10.0, 0.0, None, None, None, None, 0.0, 0.0, None, None, None, 0)


def test_narrow_counters_peg_at_their_widths(ingested: list) -> None:
    pegged = sample("gpu-017", "mlx5_0", 1, 3)
    values = (
        pegged.tx_bytes, pegged.rx_bytes, pegged.tx_packets, pegged.rx_packets, pegged.xmit_wait,
        pegged.symbol_errors, pegged.link_downed, pegged.link_error_recovery, pegged.rcv_errors,
        pegged.local_link_integrity, pegged.excessive_buffer_overrun, pegged.rate, pegged.state,
        pegged.saturated,
    )  # fmt: skip
    # symbol_error 65535 (16-bit), link_downed 255 (8-bit), local_link_integrity 15 (4-bit):
    # bits 5, 6 and 9 = 32 + 64 + 512.
    assert values == (1.0e9, 5.0e8, 2.5e5, 1.25e5, 100.0, None, None, 1.0, 2.0, None, 0.0,
                      5.0e10, 4, 608)  # fmt: skip
    down = sample("gpu-017", "mlx5_1", 2, 3)
    assert (down.state, down.phys_state, down.tx_bytes, down.saturated) == (1, 3, 0.0, 0)


def test_the_saturation_rule_fires_on_the_pegged_narrow_counters(ingested: list) -> None:
    evaluate(now=EPOCH + (SCRAPES - 1) * STEP)
    found = {
        (a.rule, a.labels.get("node"), a.labels.get("device"), a.labels.get("port"), a.state)
        for a in Alert.objects.all()
    }
    # The full set: no port-error or flap alert from a pegged (NULL) counter, none on i40iw0.
    assert found == {
        ("ib_counter_saturated", "ne-e2e", "mlx4_0", "1", "firing"),
        ("ib_counter_saturated", "gpu-017", "mlx5_0", "1", "firing"),
    }


def test_fixture_was_read_from_node_exporters_e2e_output() -> None:
    header = (FIXTURES / "ib_node_exporter_e2e.prom").read_text().splitlines()[:3]
    assert "a7dcc3a01545180d4f2087db70994cbc3abfed13" in " ".join(header)
    assert {s.label("device") for s in parse(FIXTURES / "ib_node_exporter_e2e.prom")} == {
        "i40iw0",
        "mlx4_0",
    }
