"""Parser edge cases on recorded Prometheus answers: NaN, ±Inf, missing labels, non-JSON bodies."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.models import FamilyHealth, GpuHotSample, IbHotSample, IngestCursor, XidEvent
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_family
from tests.ingest.promstub import StubPrometheus, recorded, serving

T0 = 1_700_000_010
pytestmark = pytest.mark.django_db(transaction=True)


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@pytest.fixture(autouse=True)
def _old_data_is_in_retention(settings) -> None:
    settings.INGEST_PROMETHEUS_RETENTION_DAYS = 100_000
    settings.INGEST_DCGM_DIALECT = "auto"
    settings.INGEST_IB_DIALECT = "auto"


def gpu_stub() -> StubPrometheus:
    return StubPrometheus(
        {
            "DCGM_FI_DEV_GPU_UTIL": recorded("dcgm_util_edge.json"),
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": recorded("not_json.txt"),
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": recorded("dcgm_nvlink_flit.json"),
            "DCGM_FI_DEV_XID_ERRORS": recorded("dcgm_xid.json"),
        }
    )


def gpu_rows() -> dict[tuple[int, int], tuple]:
    return {
        (gpu, int(ts.timestamp()) - T0): (util, tensor, flit)
        for gpu, ts, util, tensor, flit in GpuHotSample.objects.order_by("gpu", "ts").values_list(
            "gpu", "ts", "util", "tensor", "nvlink_crc_flit"
        )
    }


def test_bad_points_are_skipped_and_counted_and_the_cycle_completes() -> None:
    with serving(gpu_stub()) as stub:
        outcome = ingest_family(
            "gpu", since=at(T0), until=at(T0 + 60), client=PrometheusClient(stub.url)
        )

    assert outcome.status == "ok", outcome.error
    # util: NaN 1 + Inf 1 + no node 3 + no gpu 3 + malformed 2; tensor: 1 non-JSON answer.
    assert outcome.skipped == 11
    assert gpu_rows() == {
        (0, 30): (30.0, None, 3.0),  # NaN point replaced by the duplicate target's 30
        (0, 60): (75.0, None, 2.0),  # counter reset: the increase is the new value
        (1, 30): (10.0, None, 0.0),
        (1, 60): (20.0, None, None),  # pegged at 2^32-1: unknown, never 0
    }
    assert IngestCursor.objects.get(family="gpu").covered_until == at(T0 + 60)
    health = FamilyHealth.objects.get(family="gpu")
    assert (health.rows, health.skipped, health.errors) == (outcome.rows, 11, 0)


def test_xid_changes_are_events_and_sticky_values_are_not() -> None:
    with serving(gpu_stub()) as stub:
        ingest_family("gpu", since=at(T0), until=at(T0 + 60), client=PrometheusClient(stub.url))

    events = list(XidEvent.objects.order_by("gpu", "ts").values_list("gpu", "ts", "code"))
    assert events == [(0, at(T0 + 30), 79), (1, at(T0 + 60), 48)]


def test_the_same_window_twice_writes_the_same_rows() -> None:
    with serving(gpu_stub()) as stub:
        client = PrometheusClient(stub.url)
        first = ingest_family("gpu", since=at(T0), until=at(T0 + 60), client=client)
        before = gpu_rows()
        second = ingest_family("gpu", since=at(T0), until=at(T0 + 60), client=client)

    assert first.rows == 6  # 4 samples + 2 XID events
    assert second.rows == 0
    assert gpu_rows() == before
    assert XidEvent.objects.count() == 2


def test_ib_saturated_counter_is_flagged_not_zero() -> None:
    # mlx5_1's 32-bit PortXmitData is pegged: node_exporter shows 4 x (2^32 - 1) = 17179869180
    # (procfs multiplies the sysfs words by 4), not 2^32 - 1.
    stub = StubPrometheus(
        {"node_infiniband_port_data_transmitted_bytes_total": recorded("ib_tx_edge.json")}
    )
    with serving(stub):
        outcome = ingest_family(
            "ib", since=at(T0), until=at(T0 + 60), client=PrometheusClient(stub.url)
        )

    rows = list(
        IbHotSample.objects.order_by("port__device", "ts").values_list(
            "port__node__name", "port__device", "tx_bytes", "saturated"
        )
    )
    assert rows == [
        ("gpu-002", "mlx5_0", 1000.0, 0),
        ("gpu-002", "mlx5_0", 1000.0, 0),
        ("gpu-002", "mlx5_1", None, 1),
        ("gpu-002", "mlx5_1", None, 1),
    ]
    assert outcome.skipped == 3


def test_prometheus_down_records_an_outage_and_keeps_the_cursor() -> None:
    from ingest.models import PrometheusOutage

    outcome = ingest_family(
        "gpu", since=at(T0), until=at(T0 + 60), client=PrometheusClient("http://127.0.0.1:1")
    )

    assert outcome.status == "error"
    assert not IngestCursor.objects.filter(family="gpu").exists()
    assert PrometheusOutage.objects.filter(ended_at__isnull=True).count() == 1
    assert FamilyHealth.objects.get(family="gpu").errors == 1


def test_range_queries_are_uncompressed_form_posts() -> None:
    with serving(gpu_stub()) as stub:
        ingest_family("gpu", since=at(T0), until=at(T0 + 60), client=PrometheusClient(stub.url))

    ranges = [r for r in stub.requests if r["path"].endswith("/query_range")]
    assert ranges and all(r["method"] == "POST" and "query" in r for r in ranges)
    assert {r["accept_encoding"] for r in ranges} == {"identity"}
