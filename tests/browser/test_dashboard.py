"""The dashboard in headless Chromium against a real daphne + Redis + Postgres."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest

from ingest.events import ingest_committed, publish_committed
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD
from tests.dashboard.factories import SCRIPT_NODE, XSS_NODE, align, make_cluster, write_samples
from tests.dashboard.test_pages import make_alert

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HEATMAP_DRAWN = "() => window.cwFabric && window.cwFabric.drawnAt !== null"


def z_matrix(page: object) -> list[list[float | None]]:
    return page.evaluate("() => document.getElementById('heatmap').data[0].z")  # type: ignore[attr-defined]


def test_pages_heatmap_click_and_live_column(browser, asgi_server, user, screenshot) -> None:  # noqa: ANN001
    end = align(datetime.now(UTC), 30) - timedelta(seconds=60)
    cluster = make_cluster(count=16, hours=1, end=end)
    make_alert(cluster.drift_node)
    make_alert(cluster.error_node, severity="warning", silenced=True)
    make_alert(XSS_NODE, severity="warning")
    page = log_in(browser, asgi_server.url, user.username, PASSWORD)

    # Overview: counts and the reported-vs-real chart.
    screenshot(page, "overview")
    assert page.errors == []
    page.wait_for_selector("#plot-util .main-svg")
    assert page.inner_text("[data-state=critical] .count") == "1"
    assert page.inner_text("[data-state=healthy] .count") == "13"
    screenshot(page, "overview")

    # Fabric: one row per node; the drift node stands out.
    page.goto("/fabric/?metric=drift&window=1h")
    page.wait_for_function(HEATMAP_DRAWN)
    state = page.evaluate("() => window.cwFabric.state().body")
    assert state["nodes"] == sorted(state["nodes"]) and len(state["nodes"]) == 16
    assert len(z_matrix(page)) == 16
    means = {n: sum(v for v in row if v is not None) / max(1, sum(v is not None for v in row))
             for n, row in zip(state["nodes"], z_matrix(page), strict=True)}  # fmt: skip
    others = [m for n, m in means.items() if n != cluster.drift_node]
    assert means[cluster.drift_node] > 2 * max(others)
    page.wait_for_selector("#rails .main-svg")
    screenshot(page, "fabric")

    # Live: an ingest cycle (rows through ingest's store, then its committed event) fills a new column.
    page.evaluate("() => { window.__sameDocument = true; }")
    column = state["times"].index(end.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert all(row[column] is None for row in z_matrix(page))
    write_samples(cluster, end, end + timedelta(seconds=30))
    event = ingest_committed(["gpu", "ib"], (end + timedelta(seconds=30)).isoformat(), 64)
    publisher = threading.Thread(target=publish_committed, args=(event,))  # off Playwright's loop
    publisher.start()
    publisher.join()
    # The window slides as columns arrive, so find the column by its time.
    filled = """([t]) => { const s = window.cwFabric.state().body, j = s.times.indexOf(t);
        return j >= 0 && s.values.every(row => row[j] !== null); }"""
    page.wait_for_function(filled, arg=[state["times"][column]], timeout=10_000)
    assert z_matrix(page) is not None
    assert page.evaluate("() => window.__sameDocument") is True

    # Click the drift node's cell: its page, at that time.
    row = state["nodes"].index(cluster.drift_node)
    at = state["times"][column - 10]
    x, y = page.evaluate(
        """([row, at]) => { const gd = document.getElementById('heatmap'), L = gd._fullLayout;
           const box = gd.getBoundingClientRect();
           return [box.left + L.xaxis._offset + L.xaxis.d2p(at) + 2, box.top + L.yaxis._offset + L.yaxis.d2p(row)]; }""",
        [row, at],
    )
    page.mouse.click(x, y)
    page.wait_for_url("**/nodes/**")
    assert unquote(page.url.split("/nodes/")[1].split("/")[0]) == cluster.drift_node
    clicked = datetime.fromisoformat(unquote(page.url.split("at=")[1]).replace("Z", "+00:00"))
    assert abs(clicked - datetime.fromisoformat(at.replace("Z", "+00:00"))) <= timedelta(seconds=60)
    page.wait_for_selector("#plot-gpus .main-svg")
    screenshot(page, "node")

    # Hostile names are text everywhere; nothing they carry ran.
    page.goto("/nodes/")
    assert page.get_by_text(XSS_NODE, exact=True).is_visible()
    assert page.get_by_text(SCRIPT_NODE, exact=True).is_visible()
    screenshot(page, "nodes")
    page.goto("/alerts/")
    screenshot(page, "alerts")
    page.goto("/fabric/?metric=ib_tx&window=24h")
    page.wait_for_function(HEATMAP_DRAWN)
    page.wait_for_selector("#rails .main-svg")
    screenshot(page, "fabric-24h")
    page.goto("/fabric/?metric=ib_tx&window=1h&sort=topology")
    page.wait_for_function(HEATMAP_DRAWN)
    page.hover("#heatmap .nsewdrag")
    assert page.evaluate("() => window.__xss") is None and page.dialogs == []
