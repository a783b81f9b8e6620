"""dcgm-exporter as it really writes (fixtures/dcgm_*.prom) → real Prometheus → ingest: exact values.

Scrape ``a`` is served for 5 minutes, then scrape ``b`` (an XID 79 on GPU 1; on the 1.x
names, the NVLink error counters advance). Sources are named in each fixture's header.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.models import GpuHotSample, Node, XidEvent
from tests.conformance.scrapes import T0, Scrape, at, backfilled, ingest
from tests.support.prometheus import PrometheusProcess
from tests.support.timeseries import truncate_timeseries

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
NODE = "gpu-node-01"
MODEL = "NVIDIA H100 80GB HBM3"
#: Bytes/s per unit of DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (DCGM: KiB/s / 1000, "MB/s").
NVLINK_UNIT = 1_024_000
SINCE, UNTIL = T0 + 60, T0 + 570  # ingested steps: T0+90 … T0+570 (17 steps)


def history(workdir: Path, dialect: str) -> Iterator[PrometheusProcess]:
    scrapes = [
        Scrape(f"dcgm_{dialect}_a.prom", T0, T0 + 300, "dcgm-exporter", "10.42.7.19:9400"),
        Scrape(f"dcgm_{dialect}_b.prom", T0 + 300, T0 + 600, "dcgm-exporter", "10.42.7.19:9400"),
    ]
    with backfilled(workdir, scrapes) as prometheus:
        yield prometheus


@pytest.fixture(scope="module")
def current(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    yield from history(tmp_path_factory.mktemp("dcgm_current"), "current")


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusProcess]:
    yield from history(tmp_path_factory.mktemp("dcgm_legacy"), "legacy")


def row(gpu: int, ts: float) -> GpuHotSample:
    return GpuHotSample.objects.get(node__name=NODE, gpu=gpu, ts=at(ts))


def values(sample: GpuHotSample, *columns: str) -> tuple:
    return tuple(getattr(sample, column) for column in columns)


GAUGES = ("util", "tensor", "sm", "dram", "power", "temp")
NVLINK = ("nvlink_bw", "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery")


def test_current_default_counters_are_stored_exactly(current: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(current, ["gpu"], SINCE, UNTIL)
    assert list(Node.objects.values_list("name", "gpu_model")) == [(NODE, MODEL)]
    assert GpuHotSample.objects.count() == 34
    # SM_ACTIVE and the NVLink error counters are not in the default CSV: unknown, not 0.
    assert values(row(0, T0 + 150), *GAUGES) == (100.0, 0.45231, None, 0.301245, 612.345, 47.0)
    assert values(row(0, T0 + 150), *NVLINK) == (15234 * NVLINK_UNIT, None, None, None, None)
    assert values(row(1, T0 + 450), *GAUGES) == (0.0, 0.0, None, 0.0, 71.25, 39.0)
    assert values(row(1, T0 + 450), *NVLINK) == (0.0, None, None, None, None)
    assert row(0, T0 + 570).nvlink_bw == 15302 * NVLINK_UNIT


def test_nvlink_bandwidth_is_read_as_the_rate_it_is(current: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(current, ["gpu"], SINCE, UNTIL)
    stored = list(
        GpuHotSample.objects.filter(node__name=NODE, gpu=1).order_by("ts").values_list("nvlink_bw")
    )
    # 14871 MB/s while scrape a is served, 0 after the XID: never an increase of the "counter".
    assert [value for (value,) in stored] == [14871 * NVLINK_UNIT] * 7 + [0.0] * 10


def test_xid_is_one_event_with_dcgm_exporters_message(current: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(current, ["gpu"], SINCE, UNTIL)
    assert list(XidEvent.objects.values_list("node__name", "gpu", "code", "ts", "message")) == [
        (NODE, 1, 79, at(T0 + 300), "GPU has fallen off the bus")
    ]


def test_legacy_names_store_nvlink_crc_increases(legacy: PrometheusProcess) -> None:
    truncate_timeseries()
    ingest(legacy, ["gpu"], SINCE, UNTIL)
    assert list(Node.objects.values_list("name", "gpu_model")) == [(NODE, MODEL)]
    assert values(row(0, T0 + 300), *NVLINK) == (15302 * NVLINK_UNIT, 37.0, 14.0, 7.0, 1.0)
    assert values(row(0, T0 + 270), *NVLINK) == (15234 * NVLINK_UNIT, 0.0, 0.0, 0.0, 0.0)
    assert values(row(1, T0 + 300), *NVLINK) == (14990 * NVLINK_UNIT, 0.0, 0.0, 0.0, 0.0)
    flit = GpuHotSample.objects.filter(node__name=NODE, gpu=0).values_list("nvlink_crc_flit")
    assert sorted(value for (value,) in flit) == [0.0] * 16 + [37.0]
    # The 1.x CSV has no SM_ACTIVE or DRAM line: unknown; util and tensor as written.
    assert values(row(0, T0 + 150), *GAUGES) == (100.0, 0.45231, None, None, 612.345, 47.0)
    assert XidEvent.objects.count() == 0
