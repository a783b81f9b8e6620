"""alerts.selectors for the runs pages: the alerts drawn over a run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alerts import selectors
from alerts.models import Alert, AlertState
from tests.alerts.notify_helpers import make_alert

pytestmark = pytest.mark.django_db
RUN_START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
RUN_END = RUN_START + timedelta(hours=4)


def alert_on(node: str, state: str, since: datetime, until: datetime | None, rule: str) -> Alert:
    alert = make_alert(node, rule=rule, state=state)
    Alert.objects.filter(pk=alert.pk).update(pending_since=since, resolved_at=until)
    return alert


def test_alerts_for_run_are_the_overlapping_ones_on_its_nodes_never_the_inactive() -> None:
    hour = timedelta(hours=1)
    alert_on("gpu-001", AlertState.FIRING, RUN_START + hour, None, "gpu_tensor_drift")
    alert_on("gpu-002", AlertState.RESOLVED, RUN_START - hour, RUN_START + hour, "gpu_xid")
    alert_on("gpu-001", AlertState.PENDING, RUN_START + 2 * hour, None, "ib_port_errors")
    # A pending blip that never fired: no resolved_at, so drawn it would last to the run's end.
    alert_on("gpu-001", AlertState.INACTIVE, RUN_START + hour, None, "ib_link_flap")
    alert_on("gpu-002", AlertState.RESOLVED, RUN_START - 3 * hour, RUN_START - hour, "gpu_ecc_dbe")
    alert_on("gpu-001", AlertState.FIRING, RUN_END + hour, None, "gpu_throttle")
    alert_on("gpu-009", AlertState.FIRING, RUN_START + hour, None, "gpu_pcie_replay")
    found = selectors.alerts_for_run(["gpu-001", "gpu-002"], RUN_START, RUN_END)
    assert [(a.rule, a.node, a.state) for a in found] == [
        ("gpu_xid", "gpu-002", "resolved"),
        ("gpu_tensor_drift", "gpu-001", "firing"),
        ("ib_port_errors", "gpu-001", "pending"),
    ]


def test_alert_by_id_finds_one_alert_or_none() -> None:
    alert = make_alert("gpu-001")
    assert selectors.alert_by_id(alert.pk) == alert
    assert selectors.alert_by_id(alert.pk + 1) is None
