"""The pages: render with data and without, escape label values, bounded queries, alerts."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from urllib.parse import quote

import pytest
from django.test import Client

from tests.dashboard.factories import SCRIPT_NODE, XSS_NODE, Cluster

pytestmark = pytest.mark.django_db


def make_alert(
    node: str, severity: str = "critical", state: str = "firing", silenced: bool = False
) -> object:
    from alerts.models import Alert
    from core import clock

    now = clock.now()
    return Alert.objects.create(
        rule="gpu_tensor_drift", fingerprint=f"fp-{node}-{state}", labels={"node": node, "run": "<b>run</b>",
        "namespace": "ml"}, node=node, severity=severity, state=state, pending_since=now - timedelta(minutes=20),
        firing_at=now - timedelta(minutes=15), last_match_at=now, silenced=silenced, summary=f"drift on {node}",
    )  # fmt: skip


@pytest.mark.parametrize("path", ["/", "/fabric/", "/nodes/", "/alerts/"])
def test_pages_need_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


EMPTY_PAGE_SAYS = {
    "/": ["Nothing firing.", "No ingest cycle has run yet", "No GPU metrics in the last 24 h."],
    "/fabric/": ["No nodes known yet: ingest has stored nothing.", 'href="/coverage/"'],
    "/nodes/": ["No nodes known yet: ingest has stored nothing.", 'href="/coverage/"'],
    "/alerts/": ["No alerts match these filters."],
}


@pytest.mark.parametrize("path", list(EMPTY_PAGE_SAYS))
def test_empty_pages_say_what_to_do(logged_in_client: Client, path: str) -> None:
    response = logged_in_client.get(path)
    assert response.status_code == 200
    text = response.content.decode()
    assert [said for said in EMPTY_PAGE_SAYS[path] if said not in text] == []


def test_overview_counts_and_flags_critical_nodes(
    logged_in_client: Client, cluster: Cluster, fixed_epoch: datetime, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    make_alert(cluster.drift_node)
    make_alert(cluster.error_node, severity="warning", silenced=True)
    with django_assert_max_num_queries(16):
        response = logged_in_client.get("/")
    text = response.content.decode()
    assert 'data-state="critical"' in text and "gpu_tensor_drift" in text
    states = response.context["states"]
    assert states == {"healthy": 2, "warning": 0, "critical": 1, "silenced": 1, "missing": 0}
    # Every script and stylesheet is served from here: none from a CDN (a CSRF token may
    # contain the letters "cdn", so the sources are checked, not the whole page).
    sources = re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', text)
    assert "/static/vendor/plotly/plotly.min." in " ".join(sources)
    assert [s for s in sources if not s.startswith("/static/")] == []


@pytest.mark.parametrize("page", ["/nodes/", "/", "/alerts/"])
def test_html_in_label_values_is_rendered_as_text(
    logged_in_client: Client, cluster: Cluster, page: str
) -> None:
    make_alert(XSS_NODE)
    text = logged_in_client.get(page).content.decode()
    assert XSS_NODE not in text and SCRIPT_NODE not in text and "<b>run</b>" not in text


def test_node_detail_escapes_the_name_everywhere_including_figure_json(
    logged_in_client: Client, cluster: Cluster
) -> None:
    make_alert(SCRIPT_NODE)
    response = logged_in_client.get(f"/nodes/{quote(SCRIPT_NODE, safe='')}/")
    assert response.status_code == 200
    text = response.content.decode()
    assert SCRIPT_NODE not in text
    assert "&lt;script&gt;window.__xss=2" in text


def test_node_detail_shows_gpus_ports_runs_and_the_at_marker(
    logged_in_client: Client, cluster: Cluster, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    at = (cluster.end - timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with django_assert_max_num_queries(14):
        response = logged_in_client.get(f"/nodes/{cluster.drift_node}/?at={at}")
    assert response.status_code == 200
    context = response.context
    assert context["at"] is not None and context["span"].span == timedelta(hours=1)
    names = [trace["name"] for trace in context["gpu_figure"]["data"]]
    assert "GPU 0" in names and "GPU 1" in names
    assert [p.device for p in context["ports"]] == ["mlx5_0", "mlx5_1"]
    assert "leaf-" in response.content.decode()


def test_node_detail_bad_at_is_400_and_unknown_node_404(
    logged_in_client: Client, cluster: Cluster
) -> None:
    assert logged_in_client.get(f"/nodes/{cluster.drift_node}/?at=later").status_code == 400
    assert logged_in_client.get("/nodes/no-such-node/").status_code == 404


def test_node_list_query_count_does_not_grow_with_nodes(
    logged_in_client: Client, cluster: Cluster, django_assert_max_num_queries
) -> None:  # noqa: ANN001
    with django_assert_max_num_queries(6):
        response = logged_in_client.get("/nodes/")
    assert response.content.decode().count('href="/nodes/') == 1 + 4  # the nav, then one per node


def test_alerts_page_filters_by_state_and_links_to_the_node_at_the_alert_time(
    logged_in_client: Client, cluster: Cluster
) -> None:
    make_alert(cluster.drift_node)
    make_alert(cluster.error_node, state="resolved")
    firing = logged_in_client.get("/alerts/?state=firing").context["alerts"]
    assert [a["node"] for a in firing] == [cluster.drift_node]
    text = logged_in_client.get("/alerts/?state=resolved").content.decode()
    assert f"/nodes/{cluster.error_node}/?at=" in text and "/runs/ml/%3Cb%3Erun%3C%2Fb%3E/" in text
    assert logged_in_client.get("/alerts/").context["counts"] == {
        "firing": 1, "pending": 0, "silenced": 0, "resolved": 1}  # fmt: skip


def test_heatmap_marks_rows_with_firing_and_silenced_alerts(
    logged_in_client: Client, cluster: Cluster
) -> None:
    make_alert(cluster.drift_node)
    make_alert(cluster.error_node, severity="warning", silenced=True)
    marks = logged_in_client.get("/api/v1/heatmap?metric=drift&window=6h").json()["marks"]
    assert marks == {
        cluster.drift_node: {"state": "critical", "alerts": ["gpu_tensor_drift"]},
        cluster.error_node: {"state": "silenced", "alerts": ["gpu_tensor_drift"]},
    }
