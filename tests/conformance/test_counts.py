"""Every count on the overview and alerts page equals the rows it counts (several alerts per severity and state)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from alerts import selectors
from alerts.models import Alert
from tests.alerts.notify_helpers import STARTED, make_alert

pytestmark = pytest.mark.django_db

# (node, severity, state, silenced, inhibited): 7 firing (4 critical, 2 warning, 1 info) of which
# 2 are muted, 3 pending, 2 resolved; every alert starts at its own time.
ALERTS = [
    ("gpu-001", "critical", "firing", False, False),
    ("gpu-002", "critical", "firing", False, False),
    ("gpu-003", "critical", "firing", False, False),
    ("gpu-004", "critical", "firing", True, False),
    ("gpu-005", "warning", "firing", False, False),
    ("gpu-006", "warning", "firing", False, True),
    ("gpu-007", "info", "firing", False, False),
    ("gpu-008", "critical", "pending", False, False),
    ("gpu-009", "warning", "pending", False, False),
    ("gpu-010", "warning", "pending", True, False),
    ("gpu-011", "critical", "resolved", False, False),
    ("gpu-012", "info", "resolved", False, False),
    ("gpu-013", "critical", "inactive", False, False),
]


@pytest.fixture
def alerts() -> list[Alert]:
    rows = []
    for minute, (node, severity, state, silenced, inhibited) in enumerate(ALERTS):
        alert = make_alert(
            node, severity=severity, state=state, silenced=silenced, inhibited=inhibited
        )
        Alert.objects.filter(pk=alert.pk).update(firing_at=STARTED + timedelta(minutes=minute))
        rows.append(alert)
    return rows


def test_alert_counts_by_state_count_every_row(alerts: list[Alert]) -> None:
    assert selectors.alert_counts_by_state() == {
        "firing": 7, "pending": 3, "resolved": 2, "firing_muted": 2, "silenced": 2,
        "inhibited": 1}  # fmt: skip


TABS = {
    "firing": ["gpu-001", "gpu-002", "gpu-003", "gpu-005", "gpu-007"],
    "silenced": ["gpu-004", "gpu-006"],
    "pending": ["gpu-008", "gpu-009", "gpu-010"],
    "resolved": ["gpu-011", "gpu-012"],
}


def test_alerts_page_badges_equal_the_rows_each_tab_lists(
    alerts: list[Alert], logged_in_client: Client
) -> None:
    assert logged_in_client.get("/alerts/").context["counts"] == {
        tab: len(nodes) for tab, nodes in TABS.items()
    }
    for tab, nodes in TABS.items():
        listed = logged_in_client.get(f"/alerts/?state={tab}").context["alerts"]
        assert sorted(a["node"] for a in listed) == nodes, tab


def test_overview_firing_badge_equals_its_unmuted_firing_rows(
    alerts: list[Alert], logged_in_client: Client
) -> None:
    overview = logged_in_client.get("/api/v1/overview").json()
    assert overview["alerts"]["counts"] == {"firing": 5, "pending": 3, "silenced": 2, "resolved": 2}
    page = logged_in_client.get("/").content.decode()
    assert '<span class="badge" id="firing-count">5</span>' in page
