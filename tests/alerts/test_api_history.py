"""GET /api/v1/alerts: since/until, label filters, cursor pages, CSV safe against formulas; the page."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.test import Client

from alerts.models import Alert

pytestmark = [pytest.mark.django_db]
T = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def alert(i: int, **labels: str) -> Alert:
    """Alert i began i hours before T and resolved half an hour later (i ≥ 1), or still fires."""
    start = T - timedelta(hours=i)
    return Alert.objects.create(
        rule="ib_port_errors", fingerprint=f"{i:064d}", node=f"gpu-{i:03d}", severity="critical",
        labels={"alertname": "ib_port_errors", "node": f"gpu-{i:03d}", **labels},
        state="resolved" if i else "firing", summary=labels.get("summary", f"alert {i}"),
        pending_since=start, firing_at=start, last_match_at=start + timedelta(minutes=30),
        resolved_at=start + timedelta(minutes=30) if i else None,
    )  # fmt: skip


def ids(body: dict) -> list[int]:
    return [a["id"] for a in body["alerts"]]


def test_cursor_pages_walk_every_alert_once_newest_first(logged_in_client: Client) -> None:
    made = [alert(i, team="ml-infra" if i % 2 else "cv") for i in range(7)]
    seen, url = [], "/api/v1/alerts?limit=3&team=ml-infra"
    while url:
        body = logged_in_client.get(url).json()
        seen += ids(body)
        url = body["next"]
    assert seen == [made[i].pk for i in (1, 3, 5)]
    seen, url = [], "/api/v1/alerts?limit=2"
    while url:
        body = logged_in_client.get(url).json()
        seen += ids(body)
        url = body["next"]
    assert seen == [a.pk for a in made]


def test_since_and_until_keep_the_alerts_alive_in_between(logged_in_client: Client) -> None:
    made = [alert(i) for i in range(5)]
    since, until = (
        (T - timedelta(hours=3, minutes=15)).isoformat(),
        (T - timedelta(hours=1)).isoformat(),
    )
    body = logged_in_client.get("/api/v1/alerts", {"since": since, "until": until}).json()
    # Alert 4 ended at -3h30 (before since); alert 0 began at T (after until).
    assert ids(body) == [made[1].pk, made[2].pk, made[3].pk]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-05-01T12:00:00Z", "until": "2026-05-01T11:00:00Z"}, "until"),
        ({"cursor": "not-ours"}, "cursor"),
        ({"format": "xml"}, "format"),
        ({"limit": "0"}, "limit"),
        ({"severity": "bad"}, "severity"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_history_queries_are_refused_naming_the_field(
    logged_in_client: Client, query, field
) -> None:  # noqa: ANN001
    response = logged_in_client.get("/api/v1/alerts", query)
    assert (response.status_code, response.json()["field"]) == (400, field)


def test_csv_cells_never_start_a_formula(logged_in_client: Client) -> None:
    hostile = alert(1, namespace="=HYPERLINK(\"http://evil\")", team="+cmd", pool="@SUM(A1)",
                    run="-2+3", summary="\tfoo")  # fmt: skip
    response = logged_in_client.get("/api/v1/alerts?format=csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["id", "rule", "state", "severity", "node", "namespace", "run", "team", "pool",
                       "started_at", "firing_at", "resolved_at", "value", "summary"]  # fmt: skip
    assert rows[1] == [
        str(hostile.pk), "ib_port_errors", "resolved", "critical", "gpu-001",
        "'=HYPERLINK(\"http://evil\")", "'-2+3", "'+cmd", "'@SUM(A1)",
        hostile.pending_since.isoformat(), hostile.firing_at.isoformat(),
        hostile.resolved_at.isoformat(), "", "'\tfoo",
    ]  # fmt: skip


def test_the_csv_links_its_next_page(logged_in_client: Client) -> None:
    made = [alert(i) for i in range(3)]
    response = logged_in_client.get("/api/v1/alerts?format=csv&limit=2")
    assert response["Link"].startswith("</api/v1/alerts?format=csv&limit=2&cursor=")
    following = response["Link"][1:].split(">")[0]
    rows = list(csv.reader(io.StringIO(logged_in_client.get(following).content.decode())))
    assert [int(r[0]) for r in rows[1:]] == [made[2].pk]


def test_the_alerts_page_shows_50_a_page_and_filters_by_labels(logged_in_client: Client) -> None:
    for i in range(60):
        alert(i, team="ml-infra" if i < 55 else "cv", pool="training")
    first = logged_in_client.get("/alerts/")
    assert (
        len(first.context["alerts"]) == 50 and "page 1 of 2 · 60 alerts" in first.content.decode()
    )
    second = logged_in_client.get("/alerts/?page=2")
    assert [a["node"] for a in second.context["alerts"]] == [f"gpu-{i:03d}" for i in range(50, 60)]
    team = logged_in_client.get("/alerts/?team=cv&pool=training&state=resolved")
    assert [a["node"] for a in team.context["alerts"]] == [f"gpu-{i:03d}" for i in range(55, 60)]
    assert logged_in_client.get("/alerts/?rule=gpu_xid").context["alerts"] == []
    css = (Path(__file__).parents[2] / "dashboard/static/dashboard/dashboard.css").read_text()
    assert (
        ".badge { white-space: nowrap; overflow-wrap: normal; }" in css
    )  # no badge wraps mid-word
