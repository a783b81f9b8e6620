"""A real Alertmanager (0.25, Debian's) behind an Alertmanager channel, read back with amtool.

Alertmanager resolves an alert that is not re-sent within its ``resolve_timeout``
(2 s here), so a silenced alert that ClusterWatch stopped sending would turn
"resolved" there; it must stay firing and be silenced there instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from django.utils import timezone

from alerts.models import Alert, Silence, SilenceMirror
from alerts.notify import services
from alerts.notify.grouping import group_key
from alerts.silences import create_silence, expire_silence
from tests.alerts.notify_helpers import make_alert, make_channel, resolve, send_all
from tests.alerts.validators import valid_webhook
from tests.support.processes import wait_until
from tests.support.receivers import Alertmanager, run_alertmanager, start_receiver

pytestmark = pytest.mark.django_db
RESOLVE_TIMEOUT = 2.0
UNKNOWN_ID = "00000000-0000-0000-0000-000000000000"
CONFIG = f"""global:
  resolve_timeout: {RESOLVE_TIMEOUT:g}s
route:
  receiver: "null"
receivers:
  - name: "null"
"""


@pytest.fixture(autouse=True)
def _resend_every_second(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS = 1  # type: ignore[attr-defined]
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]


def cycle() -> None:
    """One flush (wall clock) and the deliveries it queued, as beat and the worker do."""
    services.flush(timezone.now())
    send_all()


def keep_cycling_until(what: str, done: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Flush and deliver every 0.2 s until ``done()`` holds (bounded)."""

    def step() -> Any:
        cycle()
        return done()

    return wait_until(step, timeout, what, interval=0.2)


def keep_cycling_for(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        cycle()
        time.sleep(0.2)


def state_of(alertmanager: Alertmanager, node: str) -> dict[str, Any] | None:
    found = [a for a in alertmanager.alerts() if a["labels"].get("node") == node]
    return found[0]["status"] if found else None


def silence(alert: Alert, user: Any, **fields: Any) -> Any:
    """A ClusterWatch silence of the alert's node, applied to the row as muting would."""
    row = create_silence(
        matchers=[{"name": "node", "op": "=", "value": alert.node}],
        comment="replacing the HCA",
        created_by=user,
        **fields,
    )
    Alert.objects.filter(id=alert.id).update(silenced=True, silenced_by=row)
    return row


def test_a_silenced_alert_stays_firing_and_silenced_past_resolve_timeout(
    tmp_path: Path, staff_user: Any
) -> None:
    alert = make_alert("gpu-001", leaf_switch="leaf-07", device="mlx5_0", port="1")
    with run_alertmanager(tmp_path, CONFIG) as alertmanager:
        channel = make_channel("alertmanager", alertmanager.url)
        keep_cycling_until("the alert in Alertmanager", lambda: state_of(alertmanager, "gpu-001"))
        ours = silence(alert, staff_user, preset="1h")
        cycle()
        (mirror,) = SilenceMirror.objects.filter(channel=channel)
        keep_cycling_for(2.5 * RESOLVE_TIMEOUT)
        assert state_of(alertmanager, "gpu-001") == {
            "state": "suppressed",
            "silencedBy": [mirror.alertmanager_id],
            "inhibitedBy": [],
        }
        (queried,) = alertmanager.amtool("silence", "query")
        assert queried["id"] == mirror.alertmanager_id
        assert queried["createdBy"] == "ClusterWatch"
        assert queried["comment"] == (
            f"ClusterWatch silence {ours.pk}: replacing the HCA "
            f"(http://cw.example/admin/alerts/silence/{ours.pk}/change/)"
        )
        assert queried["matchers"] == [
            {"name": "node", "value": "gpu-001", "isRegex": False, "isEqual": True}
        ]
        assert queried["endsAt"].startswith(ours.ends_at.strftime("%Y-%m-%dT%H:%M:%S"))
        (amtool_alert,) = alertmanager.amtool("alert", "query", "--silenced")
        assert amtool_alert["labels"]["node"] == "gpu-001"

        expire_silence(ours, staff_user)
        Alert.objects.filter(id=alert.id).update(silenced=False, silenced_by=None)
        keep_cycling_until(
            "the alert active again",
            lambda: (
                state_of(alertmanager, "gpu-001")
                == {"state": "active", "silencedBy": [], "inhibitedBy": []}
            ),
        )
        assert [s["status"]["state"] for s in alertmanager.silences()] == ["expired"]
        assert SilenceMirror.objects.get().expired_at is not None

        resolve(alert, timezone.now())
        keep_cycling_until("the resolution", lambda: alertmanager.alerts() == [])


def test_an_until_resolved_silence_is_mirrored_ahead_and_extended(
    tmp_path: Path, staff_user: Any, settings: pytest.FixtureRequest
) -> None:
    settings.ALERTS_NOTIFY_SILENCE_HORIZON_SECONDS = 60  # type: ignore[attr-defined]
    alert = make_alert("gpu-002")
    with run_alertmanager(tmp_path, CONFIG) as alertmanager:
        make_channel("alertmanager", alertmanager.url)
        silence(alert, staff_user, preset="until_resolved")
        before = timezone.now()
        cycle()
        mirror = SilenceMirror.objects.get()
        assert 59 <= (mirror.ends_at - before).total_seconds() <= 61
        first_id = mirror.alertmanager_id
        cycle()  # far from its end: left as it is
        assert SilenceMirror.objects.get().ends_at == mirror.ends_at
        SilenceMirror.objects.update(ends_at=timezone.now() + (mirror.ends_at - before) / 3)
        cycle()  # under half the horizon left: extended
        extended = SilenceMirror.objects.get()
        assert (extended.ends_at - timezone.now()).total_seconds() > 55
        (active,) = [s for s in alertmanager.silences() if s["status"]["state"] == "active"]
        assert active["id"] == extended.alertmanager_id
        assert active["endsAt"].startswith(extended.ends_at.strftime("%Y-%m-%dT%H:%M:%S"))
        assert first_id  # the same silence updated in place, or replaced: either is active once


def test_an_inhibited_alert_is_forwarded_with_an_inhibited_by_label(tmp_path: Path) -> None:
    source = make_alert("gpu-003", "node_metrics_missing")
    target = make_alert("gpu-003", device="mlx5_0", port="1")
    with run_alertmanager(tmp_path, CONFIG) as alertmanager:
        make_channel("alertmanager", alertmanager.url)
        keep_cycling_until("both alerts", lambda: len(alertmanager.alerts()) == 2)
        Alert.objects.filter(id=target.id).update(inhibited=True, inhibited_by=source)
        keep_cycling_for(2.5 * RESOLVE_TIMEOUT)
        labels = sorted(
            (a["labels"]["alertname"], a["labels"].get("inhibited_by", ""))
            for a in alertmanager.alerts()
        )
    assert labels == [("ib_port_errors", "node_metrics_missing"), ("node_metrics_missing", "")]


def test_group_keys_are_the_ones_alertmanager_itself_computes(tmp_path: Path) -> None:
    hostile = 'it\'s "quoted" back\\slash\nnew line é ✓ \t tab'
    with start_receiver() as receiver:
        config = (
            "route:\n  receiver: hook\n  group_by: [alertname, pod]\n  group_wait: 100ms\n"
            f'receivers:\n  - name: hook\n    webhook_configs:\n      - url: "{receiver.url}/"\n'
        )
        with run_alertmanager(tmp_path, config) as alertmanager:
            alert = {"labels": {"alertname": "x", "pod": hostile}}
            requests.post(alertmanager.url + "/api/v2/alerts", json=[alert], timeout=5)
            wait_until(lambda: receiver.requests, 10, "Alertmanager's webhook")
    body = receiver.requests[0].json()
    valid_webhook(body)
    assert body["groupKey"] == group_key({"alertname": "x", "pod": hostile})


def test_a_silence_alertmanager_forgot_is_recreated_and_expired_without_errors(
    tmp_path: Path, staff_user: Any
) -> None:
    alert = make_alert("gpu-004")
    with run_alertmanager(tmp_path, CONFIG) as alertmanager:
        make_channel("alertmanager", alertmanager.url)
        ours = silence(alert, staff_user, preset="1h")
        cycle()
        # As after a restart without its storage: Alertmanager no longer knows that id.
        requests.delete(
            f"{alertmanager.url}/api/v2/silence/{SilenceMirror.objects.get().alertmanager_id}",
            timeout=5,
        )
        SilenceMirror.objects.update(alertmanager_id=UNKNOWN_ID)
        Silence.objects.filter(id=ours.id).update(comment="new HCA ordered")
        cycle()  # update of an id Alertmanager does not know (404): created anew
        mirror = SilenceMirror.objects.get()
        assert (mirror.last_error, mirror.alertmanager_id != UNKNOWN_ID) == ("", True)
        active = [s for s in alertmanager.silences() if s["status"]["state"] == "active"]
        assert [s["id"] for s in active] == [mirror.alertmanager_id]
        assert active[0]["comment"].startswith(f"ClusterWatch silence {ours.pk}: new HCA ordered (")
        SilenceMirror.objects.update(alertmanager_id=UNKNOWN_ID)
        expire_silence(ours, staff_user)
        cycle()  # expiring an id Alertmanager does not know (its 500 "silence not found"): done
        mirror = SilenceMirror.objects.get()
        assert mirror.expired_at is not None and mirror.last_error == ""
