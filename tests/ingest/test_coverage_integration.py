"""``manage.py coverage`` against a real Prometheus fed by the simulator with DCGM profiling off."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from simulator import Cluster, ClusterSpec, ExporterOptions
from tests.support.prometheus import SimulatedPrometheus, require_prometheus, simulated_prometheus

pytestmark = pytest.mark.prometheus


@pytest.fixture(scope="module")
def no_profiling_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SimulatedPrometheus]:
    """Eight nodes, dcgm-exporter without the profiling module, ten minutes of history."""
    require_prometheus()
    end = time.time()
    cluster = checkpointing_cluster(end)
    workdir = Path(tmp_path_factory.mktemp("coverage-prometheus"))
    with simulated_prometheus(cluster, workdir, HISTORY, families="all", end=end) as prom:
        yield prom


HISTORY = timedelta(minutes=10)


def checkpointing_cluster(end: float) -> Cluster:
    """Eight nodes, profiling off, anchored at ``end``: seed 3's runs report checkpoints all through
    the ten minutes before it (the schedule follows the epoch, so at any time of day)."""
    options = ExporterOptions(dcgm_profiling=False)
    return Cluster(
        ClusterSpec(nodes=8, seed=3, epoch=datetime.fromtimestamp(end, UTC), exporters=options)
    )


def test_command_names_the_missing_profiling_fields_and_the_fix(
    no_profiling_prometheus: SimulatedPrometheus,
) -> None:
    out = io.StringIO()
    call_command("coverage", url=no_profiling_prometheus.prometheus.url, stdout=out)
    table = out.getvalue()
    assert "PARTIAL  GPU (dcgm-exporter)" in table
    tensor = next(line for line in table.splitlines() if "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in line)
    assert "MISSING" in tensor and "required" in tensor
    assert "profiling module" in table and "dcp-metrics-included.csv" in table
    assert "OK       Kueue (kueue)" in table
    util = next(line for line in table.splitlines() if "DCGM_FI_DEV_GPU_UTIL " in line)
    assert "8 nodes" in util


def test_command_json_lists_families(no_profiling_prometheus: SimulatedPrometheus) -> None:
    out = io.StringIO()
    call_command("coverage", url=no_profiling_prometheus.prometheus.url, json=True, stdout=out)
    families = {f["family"]: f for f in json.loads(out.getvalue())["families"]}
    assert families["gpu"]["status"] == "partial"
    assert families["runs"]["status"] == "ok" and families["checkpoints"]["status"] == "ok"


@pytest.mark.django_db
@pytest.mark.urls("tests.ingest.test_coverage")
def test_page_and_api_render_the_report(
    no_profiling_prometheus: SimulatedPrometheus, logged_in_client: Client
) -> None:
    with override_settings(PROMETHEUS_URL=no_profiling_prometheus.prometheus.url):
        page = logged_in_client.get("/coverage/")
        api = logged_in_client.get("/api/v1/coverage")
    assert page.status_code == 200 and b"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in page.content
    assert api.status_code == 200 and api.json()["families"][0]["status"] == "partial"
