"""Coverage: the pure report, the command's table and JSON, the page and the API."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import include, path

from ingest.coverage import build_report, node_count_queries
from ingest.coverage_catalogue import CATALOGUE

# Until config/urls.py includes ingest.urls, the page tests route through this module.
urlpatterns = [path("", include("ingest.urls")), path("", include("config.urls"))]
ALL = {m.name for f in CATALOGUE for d in f.dialects[:1] for m in d.metrics}


def by_family(report):  # noqa: ANN001, ANN201
    return {f.family: f for f in report.families}


def test_everything_present_is_ok_with_node_counts() -> None:
    report = by_family(build_report(ALL, {"DCGM_FI_DEV_GPU_UTIL": 16}))
    assert {f.status for f in report.values()} == {"ok"}
    util = next(m for m in report["gpu"].metrics if m.name == "DCGM_FI_DEV_GPU_UTIL")
    assert (util.found, util.nodes) == (True, 16)
    assert next(m for m in report["kueue"].metrics).nodes is None  # not per node


def test_missing_profiling_fields_name_the_module_and_the_csv() -> None:
    names = {n for n in ALL if not n.startswith("DCGM_FI_PROF_")}
    gpu = by_family(build_report(names, {}))["gpu"]
    assert gpu.status == "partial"
    tensor = next(m for m in gpu.missing if m.name == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")
    assert "profiling module" in tensor.cause and "dcp-metrics-included.csv" in tensor.cause


def test_absent_families_say_what_to_deploy() -> None:
    names = {
        n for n in ALL if not n.startswith(("node_infiniband", "infiniband_", "kueue_", "kube_"))
    }
    report = by_family(build_report(names, {}))
    assert report["ib"].status == "missing" and "infiniband collector" in report["ib"].cause
    assert report["kueue"].status == "missing" and "ServiceMonitor" in report["kueue"].fix
    assert report["cluster"].status == "missing" and "kube-state-metrics" in report["cluster"].cause


def test_dialects_and_label_variants_are_noted() -> None:
    legacy = {"dcgm_gpu_utilization", "dcgm_fi_prof_pipe_tensor_active", "infiniband_hca_info"}
    report = by_family(build_report(legacy, {}, {"dcgm_hostname": 4, "dcgm_Hostname": 0}))
    assert report["gpu"].dialect == "dcgm-exporter 1.x"
    assert any("1.x" in n for n in report["gpu"].notes)
    assert any("`hostname`" in n for n in report["gpu"].notes)
    assert report["ib"].dialect == "treydock infiniband_exporter"


def test_node_count_queries_group_metrics_by_identity_labels() -> None:
    queries = node_count_queries(
        {"DCGM_FI_DEV_GPU_UTIL", "kube_node_spec_taint", "kueue_pending_workloads"}
    )
    assert set(queries) == {("Hostname", "hostname", "node"), ("node",)}
    assert 'DCGM_FI_DEV_GPU_UTIL"' in queries[("Hostname", "hostname", "node")]


@pytest.mark.django_db
@pytest.mark.urls("tests.ingest.test_coverage")
def test_page_and_api_report_an_unreachable_prometheus(logged_in_client: Client) -> None:
    page = logged_in_client.get("/coverage/")
    assert page.status_code == 503 and b"could not be queried" in page.content
    api = logged_in_client.get("/api/v1/coverage")
    assert api.status_code == 503 and api.json()["error"] == "prometheus_unavailable"


@pytest.mark.django_db
@pytest.mark.urls("tests.ingest.test_coverage")
def test_page_needs_a_login(client: Client) -> None:
    assert client.get("/coverage/").status_code == 302
    assert client.get("/api/v1/coverage").status_code == 401


def test_json_body_is_serialisable() -> None:
    assert json.loads(json.dumps(build_report(ALL, {}).as_dict()))["families"][0]["family"] == "gpu"


def test_command_fails_cleanly_without_prometheus() -> None:
    with pytest.raises(Exception, match="cannot query Prometheus"):
        call_command("coverage", url="http://127.0.0.1:1")
