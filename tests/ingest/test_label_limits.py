"""Labels that do not fit are skipped and counted, never a failed family (issue 17, item 4).

A fake Prometheus (``promstub``) answers good series beside one whose node label is 10 KB,
one with a NUL byte and (IB) one whose device is longer than ``IbPort.device``: every good
series is stored, each bad one is counted with its reason, and the cursor advances.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from ingest.identity import NODE_NAME_MAX, Problem, checked, node_name
from ingest.models import FamilyHealth, GpuHotSample, IbHotSample, IngestCursor, Node
from ingest.prometheus import PrometheusClient, Series
from ingest.runs_normalize import RunsData, add_pod_info
from ingest.services import ingest_family
from tests.ingest.promstub import StubPrometheus, serving

T0 = 1_700_000_010
LONG = "n" * 10_240


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def matrix(series: list[tuple[dict[str, str], list[tuple[int, str]]]]) -> str:
    result = [{"metric": m, "values": [[t, v] for t, v in pts]} for m, pts in series]
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


@pytest.fixture(autouse=True)
def _settings(settings) -> None:  # noqa: ANN001
    settings.INGEST_PROMETHEUS_RETENTION_DAYS = 100_000
    settings.INGEST_STEP_SECONDS = 30
    settings.INGEST_DCGM_DIALECT = settings.INGEST_IB_DIALECT = "auto"


def test_checked_is_the_one_normalisation() -> None:
    assert checked("  gpu-001 ") == ("gpu-001", "")
    assert checked("x" * NODE_NAME_MAX) == ("x" * NODE_NAME_MAX, "")
    assert checked("x" * (NODE_NAME_MAX + 1)) == (None, Problem.TOO_LONG)
    assert checked("gpu\x00001") == (None, Problem.CONTROL)
    assert checked("gpu\n001") == (None, Problem.CONTROL)
    assert checked("gpu-\ud800") == (None, Problem.SURROGATE)
    assert checked("   ") == (None, Problem.EMPTY)
    assert checked("mlx5_0", 64) == ("mlx5_0", "")
    assert checked("d" * 65, 64) == (None, Problem.TOO_LONG)


def test_without_kube_state_metrics_labels_are_taken_as_they_are() -> None:
    assert node_name({"Hostname": "nvidia-dcgm-exporter-ml2wh"}) == "nvidia-dcgm-exporter-ml2wh"
    assert node_name({"instance": "10.0.0.14:9100"}) == "10.0.0.14"
    assert node_name({"instance": "[fd00::14]:9100"}) == "fd00::14"
    assert node_name({"node": LONG, "instance": "10.0.0.14:9100"}) is None


@pytest.mark.django_db(transaction=True)
def test_a_10_kb_node_label_skips_that_series_only_and_the_gpu_cursor_advances() -> None:
    points = [(T0 + 30, "50"), (T0 + 60, "60")]
    util = matrix(
        [
            ({"Hostname": "gpu-001", "gpu": "0", "job": "dcgm-exporter"}, points),
            ({"Hostname": LONG, "gpu": "0", "job": "dcgm-exporter"}, points),
            ({"Hostname": "gpu\x00002", "gpu": "0", "job": "dcgm-exporter"}, points),
            ({"Hostname": "gpu-003", "gpu": "1", "job": "dcgm-exporter"}, points),
        ]
    )
    with serving(StubPrometheus({"DCGM_FI_DEV_GPU_UTIL": util})) as stub:
        outcome = ingest_family(
            "gpu", since=at(T0), until=at(T0 + 60), client=PrometheusClient(stub.url)
        )
    assert outcome.status == "ok", outcome.error
    assert set(Node.objects.values_list("name", flat=True)) == {"gpu-001", "gpu-003"}
    rows = set(GpuHotSample.objects.values_list("node__name", "gpu", "ts", "util"))
    assert rows == {
        ("gpu-001", 0, at(T0 + 30), 50.0),
        ("gpu-001", 0, at(T0 + 60), 60.0),
        ("gpu-003", 1, at(T0 + 30), 50.0),
        ("gpu-003", 1, at(T0 + 60), 60.0),
    }
    assert outcome.skipped == 4  # the two bad series' points
    assert FamilyHealth.objects.get(family="gpu").skipped_reasons == {
        "dcgm-exporter: node label invalid": 2
    }
    assert IngestCursor.objects.get(family="gpu").covered_until == at(T0 + 60)


@pytest.mark.django_db(transaction=True)
def test_a_10_kb_node_or_a_long_device_skips_that_port_only_and_the_ib_cursor_advances() -> None:
    points = [(T0, "1000"), (T0 + 30, "4000"), (T0 + 60, "7000")]
    job = {"job": "node-exporter", "port": "1"}
    tx = matrix(
        [
            ({"instance": "gpu-001:9100", "device": "mlx5_0", **job}, points),
            ({"node": LONG, "instance": "gpu-002:9100", "device": "mlx5_0", **job}, points),
            ({"instance": "gpu-003:9100", "device": "d" * 100, **job}, points),
            ({"instance": "gpu-003:9100", "device": "mlx5_1", **job}, points),
        ]
    )
    stub = StubPrometheus({"node_infiniband_port_data_transmitted_bytes_total": tx})
    with serving(stub) as served:
        outcome = ingest_family(
            "ib", since=at(T0), until=at(T0 + 60), client=PrometheusClient(served.url)
        )
    assert outcome.status == "ok", outcome.error
    assert set(Node.objects.values_list("name", flat=True)) == {"gpu-001", "gpu-003"}
    rows = set(
        IbHotSample.objects.values_list("port__node__name", "port__device", "ts", "tx_bytes")
    )
    assert rows == {
        ("gpu-001", "mlx5_0", at(T0 + 30), 100.0),
        ("gpu-001", "mlx5_0", at(T0 + 60), 100.0),
        ("gpu-003", "mlx5_1", at(T0 + 30), 100.0),
        ("gpu-003", "mlx5_1", at(T0 + 60), 100.0),
    }
    assert FamilyHealth.objects.get(family="ib").skipped_reasons == {
        "node-exporter: device label invalid": 1,
        "node-exporter: node label invalid": 1,
    }
    assert IngestCursor.objects.get(family="ib").covered_until == at(T0 + 60)


def test_runs_never_truncate_a_node_name_to_another_node() -> None:
    def pod(name: str, node: str) -> Series:
        labels = {"namespace": "ml", "pod": name, "created_by_name": "job-a", "node": node}
        return Series(labels, [(float(T0), 1.0), (float(T0 + 30), 1.0)])

    data = RunsData()
    add_pod_info(data, [pod("job-a-0", "gpu-001"), pod("job-a-1", "gpu-001" + LONG)], 30.0)
    assert set(data.pods) == {("ml", "job-a-0"), ("ml", "job-a-1")}
    assert data.assignments == [(("ml", "job-a-0"), "gpu-001", float(T0), float(T0 + 30))]
    assert data.nodes == {"gpu-001": (float(T0), float(T0 + 30))}
    assert data.unfit == {"kube-state-metrics: kube_pod_info node label too long": 1}
