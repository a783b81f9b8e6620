"""Hostile label values, injected through the simulator into a real Prometheus and ingested.

The simulator's ``hostile_label`` names the last node and the pods/jobs of one slot with it; the
value holds ``/``, ``<`` and ``>``. Every page, JSON answer, Plotly label and the admin must show it
as text, reachable by URL, and no script it carries may run in Chromium.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from django.test import Client

from ingest.models import Node
from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from runs.models import Job
from simulator import Cluster, ClusterSpec
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD
from tests.support.prometheus import SimulatedPrometheus, require_prometheus, simulated_prometheus

pytestmark = [pytest.mark.browser, pytest.mark.prometheus, pytest.mark.django_db(transaction=True)]

HOSTILE = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
STEP = 30.0
HEATMAP_DRAWN = "() => window.cwFabric && window.cwFabric.drawnAt !== null"


def _cluster_running_a_hostile_job(end: float) -> Cluster:
    """Seed 1's hostile slot runs a job 20 minutes before ``end`` (its epoch: at any time of day)."""
    epoch = datetime.fromtimestamp(end, UTC)
    return Cluster(ClusterSpec(nodes=8, seed=1, epoch=epoch, hostile_label=HOSTILE))


@pytest.fixture
def hostile_prometheus(tmp_path: Path) -> Iterator[SimulatedPrometheus]:
    """8 nodes, the last one named ``HOSTILE``, one run's pods and job too; 30 min of history."""
    require_prometheus()
    end = float(int(time.time() // STEP) * STEP)
    with simulated_prometheus(_cluster_running_a_hostile_job(end), tmp_path / "prometheus",
                              timedelta(minutes=30), STEP,
                              "2s", "key", end) as prom:  # fmt: skip
        yield prom


@pytest.fixture
def ingested(hostile_prometheus: SimulatedPrometheus) -> SimulatedPrometheus:
    prom = hostile_prometheus
    outcomes = ingest_all(
        since=datetime.fromtimestamp(prom.start, UTC),
        until=datetime.fromtimestamp(prom.end, UTC),
        client=PrometheusClient(prom.prometheus.url),
        families=["cluster", "topology", "gpu", "ib", "runs"],
    )
    assert all(o.status != "error" for o in outcomes), [o.error for o in outcomes]
    return prom


def _as_text(html: str) -> None:
    assert ESCAPED in html and HOSTILE not in html


def test_hostile_names_are_text_in_json_pages_and_admin(ingested, staff_user) -> None:  # noqa: ANN001
    assert Node.objects.filter(name=HOSTILE).exists()
    job = Job.objects.filter(name__startswith=HOSTILE).first()
    assert job is not None, "the simulator's hostile run was not ingested"
    client = Client()
    client.force_login(staff_user)
    end = datetime.fromtimestamp(ingested.end, UTC)
    query = {"metric": "gpu_util", "start": f"{end - timedelta(minutes=30):%Y-%m-%dT%H:%M:%SZ}",
             "end": f"{end:%Y-%m-%dT%H:%M:%SZ}", "step": 60}  # fmt: skip
    assert HOSTILE in client.get("/api/v1/heatmap?" + urlencode(query)).json()["nodes"]
    node = client.get(f"/api/v1/nodes/{quote(HOSTILE, safe='')}")
    assert node.status_code == 200 and node.json()["node"]["name"] == HOSTILE

    for url in ("/nodes/", f"/nodes/{quote(HOSTILE, safe='')}/", "/admin/ingest/node/",
                f"/admin/ingest/node/?q={quote(HOSTILE)}", "/runs/",
                f"/runs/{quote(job.namespace, safe='')}/{quote(job.name, safe='')}/"):  # fmt: skip
        response = client.get(url)
        assert response.status_code == 200, url
        _as_text(response.content.decode())


def test_hostile_names_run_nothing_in_chromium(browser, asgi_server, ingested, staff_user,  # noqa: ANN001
                                               screenshot) -> None:  # fmt: skip
    page = log_in(browser, asgi_server.url, staff_user.username, PASSWORD, width=1366)
    page.goto(f"/nodes/{quote(HOSTILE, safe='')}/")
    assert page.inner_text("h1 .node-name") == HOSTILE

    page.goto("/fabric/?metric=gpu_util&window=1h")
    page.wait_for_function(HEATMAP_DRAWN)
    nodes = page.evaluate("() => window.cwFabric.state().body.nodes")
    ticks = page.eval_on_selector_all("#heatmap .ytick text", "els => els.map(e => e.textContent)")
    assert any(tick.startswith("<script>") for tick in ticks), ticks  # shown as text, shortened
    row = nodes.index(HOSTILE)
    x, y = page.evaluate(
        """([row]) => { const gd = document.getElementById('heatmap'), L = gd._fullLayout;
           const box = gd.getBoundingClientRect();
           return [box.left + L.xaxis._offset + L.xaxis._length / 2, box.top + L.yaxis._offset + L.yaxis.d2p(row)]; }""",
        [row],
    )
    page.mouse.move(x, y)
    page.wait_for_selector("#hover:not([hidden])")
    assert page.inner_text("#hover").splitlines()[0] == HOSTILE
    screenshot(page, "fabric-hostile")

    for url in ("/nodes/", "/runs/", "/admin/ingest/node/", "/alerts/"):
        page.goto(url)
        page.wait_for_load_state("networkidle")
    assert page.dialogs == [] and page.errors == []
