"""Every page at 1,280 and 1,920 px in headless Chromium: what the screenshots showed wrong stays fixed.

Legends clear the x-axis dates, badges stay on one line, the overview's queue table shows
workload counts as integers and the window's wait p95, and a pool's line has a gap where its
nodes reported nothing. Screenshots of each page at both widths go to artifacts/screenshots/.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from ingest.models import Node
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD
from tests.dashboard.factories import align, make_cluster, make_queues, write_samples
from tests.dashboard.test_pages import make_alert
from tests.runs.factories import build_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 1920)
LONG_SUMMARY = "tensor cores idle while util reports busy on every GPU of the node " * 6

# Every Plotly legend against every x tick label of its plot: boxes that intersect.
LEGEND_OVERLAPS = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(plot => {
  const legend = plot.querySelector('.legend');
  if (!legend) { return []; }
  const box = legend.getBoundingClientRect();
  return [...plot.querySelectorAll('.xaxislayer-above text')].map(t => t.getBoundingClientRect())
    .filter(t => t.width > 0 && t.left < box.right && box.left < t.right && t.top < box.bottom
            && box.top < t.bottom)
    .map(t => [plot.dataset.figure || plot.id, t.top, box.bottom]);
})"""
# Badges taller than one line of their text (plus padding and border): wrapped.
WRAPPED_BADGES = """() => [...document.querySelectorAll('.badge')].filter(b => b.offsetParent).map(b => {
  const s = getComputedStyle(b), line = parseFloat(s.lineHeight);
  const chrome = ['paddingTop', 'paddingBottom', 'borderTopWidth', 'borderBottomWidth']
    .reduce((sum, p) => sum + parseFloat(s[p]), 0);
  return [b.textContent, b.getBoundingClientRect().height, line + chrome];
}).filter(([, height, single]) => !(height <= single + 1))"""
PLOTS = "() => [...document.querySelectorAll('.plot')].every(p => p.querySelector('.main-svg'))"


def build(end: datetime) -> dict[str, object]:
    """8 nodes with 3 h of samples but the inference pool's middle hour; alerts, a run, queues."""
    build_run(start=end - timedelta(hours=2, minutes=30))  # its raw samples: rolled up below
    cluster = make_cluster(count=8, hours=1, end=end)
    training = {
        n: pk for n, pk in cluster.node_ids.items() if Node.objects.get(pk=pk).pool == "training"
    }
    write_samples(cluster, end - timedelta(hours=3), end - timedelta(hours=2))
    write_samples(dataclasses.replace(cluster, node_ids=training), end - timedelta(hours=2),
                  end - timedelta(hours=1))  # fmt: skip
    Node.objects.update(last_seen=datetime.now(UTC))  # none "missing"
    make_alert(cluster.drift_node)
    for state in ("pending", "resolved"):
        alert = make_alert(cluster.error_node, severity="warning", state=state)
        alert.summary = LONG_SUMMARY
        alert.save(update_fields=["summary"])
    make_queues(end)
    return {"cluster": cluster, "inference": sorted(set(cluster.node_ids) - set(training))}


def visit(page: object, path: str, ready: str | None = None) -> None:
    page.goto(path)  # type: ignore[attr-defined]
    if ready:
        page.wait_for_selector(ready)  # type: ignore[attr-defined]
    try:
        page.wait_for_function(PLOTS, timeout=5000)  # type: ignore[attr-defined]
    except Exception:
        print(
            "DEBUG",
            path,
            page.evaluate(
                "() => [...document.querySelectorAll('.plot')].map(p => [p.dataset.figure, p.id, !!p.querySelector('.main-svg')])"
            ),
            page.errors,
        )
        page.screenshot(path="/tmp/ui/debug.png", full_page=True)
        raise


def test_every_page_at_two_widths(browser, asgi_server, user, screenshot) -> None:  # noqa: ANN001
    end = align(datetime.now(UTC), 900) - timedelta(minutes=15)
    built = build(end)
    pages = {
        "overview": ("/", "#plot-util .main-svg"),
        "fabric": ("/fabric/?metric=ib_tx&window=6h", "#rails .main-svg"),
        "nodes": ("/nodes/", None),
        "node": (f"/nodes/{built['cluster'].drift_node}/", "#plot-gpus .main-svg"),  # type: ignore[attr-defined]
        "alerts": ("/alerts/", None),
        "runs": ("/runs/", None),
        "run": ("/runs/team-a/llama-70b/", "#plot-timeline .main-svg"),
        "queues": ("/queues/?window=6h", None),
        "coverage": ("/coverage/", None),
    }
    for width in WIDTHS:
        page = log_in(browser, asgi_server.url, user.username, PASSWORD, width=width)
        for name, (path, ready) in pages.items():
            visit(page, path, ready)
            screenshot(page, f"{name}-{width}")
            assert page.evaluate(LEGEND_OVERLAPS) == [], (name, width)
            assert page.evaluate(WRAPPED_BADGES) == [], (name, width)
        # Coverage asks Prometheus, which no test here runs: it says so with a 503.
        assert page.errors == [f"503 {asgi_server.url}/coverage/"], width
    assert_overview_queues_and_pools(page, end, len(built["inference"]))  # type: ignore[arg-type]


def assert_overview_queues_and_pools(page: object, end: datetime, inference_nodes: int) -> None:
    visit(page, "/", "#plot-util .main-svg")
    rows = page.eval_on_selector_all(  # type: ignore[attr-defined]
        "#queue-table tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))",
    )
    # Counts as integers; the highest step p95 within the hour (75 s, not 500 s from 70 min ago).
    assert rows == [["cq-idle", "0", "2", "0", "—"], ["cq-wait", "1", "0", "4", "75 s"]]
    pools = page.evaluate(  # type: ignore[attr-defined]
        "() => document.querySelector('[data-figure=fig-pools]').data"
        ".map(t => ({name: t.name, x: t.x, y: t.y, gaps: t.connectgaps}))"
    )
    by_name = {trace["name"]: trace for trace in pools}
    assert set(by_name) == {"inference", "training", "unknown"}  # unknown: the run's two nodes
    x = by_name["inference"]["x"]
    assert len(x) == 24 * 4 + 1 and by_name["training"]["x"] == x
    first = x.index(iso(end - timedelta(hours=3)))
    after = [None] * (len(x) - first - 12)  # from the end of the data to the window's end
    # Nothing before the data; the inference nodes reported nothing in the middle hour: a gap.
    gap = [inference_nodes] * 4 + [None] * 4 + [inference_nodes] * 4
    assert by_name["inference"]["y"] == [None] * first + gap + after
    assert by_name["training"]["y"] == [None] * first + [6] * 12 + after
    assert by_name["inference"]["gaps"] is False


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
