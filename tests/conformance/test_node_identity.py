"""Node identity on what real exporters emit, through a real Prometheus and ingest.

The fixtures (tests/conformance/fixtures/identity/, each naming the upstream file and commit it
reproduces) are served as they are and scraped by Prometheus through file_sd targets whose
``instance`` is what Kubernetes service discovery gives: node_exporter on the host network
(``<node IP>:9100``, one relabelled to the node name as kube-prometheus does), dcgm-exporter
on the pod network (``<pod IP>:9400``) with ``Hostname`` = its pod name, once a container id,
plus one stray target of each that no kube-state-metrics object names.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from ingest.models import FamilyHealth, GpuHotSample, IbHotSample, IngestCursor, Node
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from tests.support.prometheus import PrometheusProcess, require_prometheus, write_config

pytestmark = [pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]
FIXTURES = Path(__file__).parent / "fixtures" / "identity"
STEP = 5
#: fixture file → (job, instance) as Prometheus' Kubernetes service discovery would label it.
TARGETS = {
    "ksm.prom": ("kube-state-metrics", "10.244.0.5:8080"),
    "dcgm-01.prom": ("dcgm-exporter", "10.244.1.7:9400"),
    "dcgm-02.prom": ("dcgm-exporter", "10.244.2.9:9400"),
    "dcgm-03.prom": ("dcgm-exporter", "10.244.3.4:9400"),
    "dcgm-stray.prom": ("dcgm-exporter", "10.244.9.9:9400"),
    "node-01.prom": ("node-exporter", "10.0.0.14:9100"),
    "node-02.prom": ("node-exporter", "10.0.0.15:9100"),
    "node-03.prom": ("node-exporter", "dgx-h100-03"),
    "node-stray.prom": ("node-exporter", "10.0.0.99:9100"),
}
NODES = {"dgx-h100-01", "dgx-h100-02", "dgx-h100-03"}
DCGM_UNRESOLVED = "dcgm-exporter: Hostname is not a node (an exporter pod or container name?)"
NODE_UNRESOLVED = "node-exporter: instance names no known node, node IP or exporter pod IP"
IDENTITY_BLOCK = """\
Node identity
    kube-state-metrics knows 3 nodes and 6 exporter pods: series are mapped to them.
    dcgm-exporter (gpu): 4 series
        mapped 1: exporter pod IP via kube_pod_info{pod_ip}
        mapped 2: exporter pod name via kube_pod_info{pod,node}
        UNRESOLVED 1: Hostname is not a node (an exporter pod or container name?)
            e.g. instance='10.244.9.9:9400', Hostname='nvidia-dcgm-exporter-zz999'
            fix: set NODE_NAME on the dcgm-exporter DaemonSet (env NODE_NAME from spec.nodeName) \
— Hostname is the pod name
    node-exporter (ib): 4 series
        mapped 1: instance IP via kube_node_info{internal_ip}
        mapped 1: instance IP via kube_pod_info{host_ip}
        mapped 1: instance names a known node
        UNRESOLVED 1: instance names no known node, node IP or exporter pod IP
            e.g. instance='10.0.0.99:9100'
            fix: relabel instance to the node name (kube-prometheus does: \
__meta_kubernetes_pod_node_name / __meta_kubernetes_endpoint_node_name)
"""


@contextmanager
def serving_fixtures() -> Iterator[str]:
    """Serve each fixture file at /<name>, as the exporter would (text format 0.0.4)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's API
            body = (FIXTURES / self.path.lstrip("/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Scraped:
    """The running Prometheus and the ingest window (since, until] its scrapes cover."""

    prometheus: PrometheusProcess
    since: datetime
    until: datetime


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    """Prometheus scraping every fixture each second until two ingest steps are covered."""
    require_prometheus()
    workdir = tmp_path_factory.mktemp("identity")
    with serving_fixtures() as address:
        groups = [
            {"targets": [address], "labels": {"job": job, "instance": instance,
                                              "__metrics_path__": f"/{name}"}}
            for name, (job, instance) in TARGETS.items()
        ]  # fmt: skip
        sd = workdir / "targets.json"
        sd.write_text(json.dumps(groups))
        prometheus = PrometheusProcess(write_config(workdir, sd, "1s"), workdir / "tsdb").start()
        try:
            first = _wait_all_scraped(prometheus)
            since = math.ceil(first / STEP) * STEP + STEP
            until = since + 2 * STEP
            time.sleep(max(0.0, until + 2 - time.time()))
            yield Scraped(prometheus, _at(since), _at(until))
        finally:
            prometheus.stop()


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _wait_all_scraped(prometheus: PrometheusProcess, timeout: float = 60.0) -> float:
    """Unix time by which every target has answered once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        up = prometheus.query("up == 1")
        if len(up) == len(TARGETS):
            return time.time()
        time.sleep(0.3)
    raise AssertionError(f"not every fixture target was scraped: {prometheus.query('up')}")


@pytest.fixture
def ingested(scraped: Scraped, settings) -> Scraped:  # noqa: ANN001
    """cluster, gpu and ib ingested over the scraped window."""
    settings.INGEST_STEP_SECONDS = STEP
    settings.INGEST_DCGM_DIALECT = settings.INGEST_IB_DIALECT = "auto"
    outcomes = ingest_all(
        since=scraped.since,
        until=scraped.until,
        client=PrometheusClient(scraped.prometheus.url),
        families=["cluster", "gpu", "ib"],
    )
    assert [(o.family, o.status) for o in outcomes] == [
        ("cluster", "ok"),
        ("gpu", "ok"),
        ("ib", "ok"),
    ], [o.error for o in outcomes]
    return scraped


def test_ingest_stores_every_sample_under_its_node(ingested: Scraped) -> None:
    assert set(Node.objects.values_list("name", flat=True)) == NODES
    gpus = set(GpuHotSample.objects.values_list("node__name", "gpu", "util", "power"))
    assert gpus == {
        ("dgx-h100-01", 0, 97.0, 655.123),  # Hostname = its pod's name
        ("dgx-h100-01", 1, 12.0, 88.5),
        ("dgx-h100-02", 0, 100.0, 700.0),
        ("dgx-h100-02", 1, 0.0, 71.25),
        ("dgx-h100-03", 0, 45.0, 400.5),  # Hostname = a container id: the pod IP names it
        ("dgx-h100-03", 1, 46.0, 401.5),
    }
    assert GpuHotSample.objects.count() == 12  # 6 GPUs x 2 steps; the stray's GPU is not stored
    ports = set(IbHotSample.objects.values_list("port__node__name", "port__device", "port__port",
                                             "tx_bytes", "state"))  # fmt: skip
    assert ports == {
        ("dgx-h100-01", "mlx5_0", 1, 0.0, 4),  # instance = InternalIP:9100
        ("dgx-h100-02", "mlx5_0", 1, 0.0, 4),  # no InternalIP: the node-exporter pod's host_ip
        ("dgx-h100-03", "mlx5_0", 1, 0.0, 4),  # relabelled to the node name
    }
    assert IbHotSample.objects.count() == 6


def test_unresolved_series_are_counted_per_exporter_with_the_reason(ingested: Scraped) -> None:
    health = {h.family: h.skipped_reasons for h in FamilyHealth.objects.all()}
    assert health == {"cluster": {}, "gpu": {DCGM_UNRESOLVED: 1}, "ib": {NODE_UNRESOLVED: 1}}
    assert set(IngestCursor.objects.values_list("family", "covered_until")) == {
        ("cluster", ingested.until),
        ("gpu", ingested.until),
        ("ib", ingested.until),
    }


def test_coverage_names_both_problems_their_fixes_and_what_it_mapped(scraped: Scraped) -> None:
    out = io.StringIO()
    call_command("coverage", url=scraped.prometheus.url, stdout=out)
    table = out.getvalue()
    assert table[table.index("Node identity") :] == IDENTITY_BLOCK
    notes = [line.strip() for line in table.splitlines() if "name no known node" in line]
    assert notes == [
        "note: 1 series of dcgm-exporter name no known node (Hostname is not a node (an exporter "
        "pod or container name?)): not stored. Fix: set NODE_NAME on the dcgm-exporter DaemonSet "
        "(env NODE_NAME from spec.nodeName) — Hostname is the pod name.",
        "note: 1 series of node-exporter name no known node (instance names no known node, node "
        "IP or exporter pod IP): not stored. Fix: relabel instance to the node name "
        "(kube-prometheus does: __meta_kubernetes_pod_node_name / "
        "__meta_kubernetes_endpoint_node_name).",
    ]


@pytest.mark.urls("tests.ingest.test_coverage")
def test_coverage_page_and_api_show_node_identity(
    scraped: Scraped, logged_in_client: Client
) -> None:
    with override_settings(PROMETHEUS_URL=scraped.prometheus.url):
        page = logged_in_client.get("/coverage/")
        api = logged_in_client.get("/api/v1/coverage")
    assert page.status_code == 200
    assert "Hostname is not a node" in page.content.decode()
    assert "set NODE_NAME on the dcgm-exporter DaemonSet" in page.content.decode()
    identity = {e["job"]: e for e in api.json()["identity"]}
    assert set(identity) == {"dcgm-exporter", "node-exporter"}
    assert [(g["reason"], g["series"], g["examples"]) for g in identity["dcgm-exporter"]["unresolved"]] == [
        ("Hostname is not a node (an exporter pod or container name?)", 1,
         ["instance='10.244.9.9:9400', Hostname='nvidia-dcgm-exporter-zz999'"]),
    ]  # fmt: skip
    assert {g["reason"]: g["series"] for g in identity["node-exporter"]["mapped"]} == {
        "instance IP via kube_node_info{internal_ip}": 1,
        "instance IP via kube_pod_info{host_ip}": 1,
        "instance names a known node": 1,
    }
