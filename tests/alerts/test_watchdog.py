"""Acceptance 4: the dead man's switch. The watchdog reaches a real Alertmanager and stays firing while
evaluation runs; the heartbeat receiver gets one ping per successful evaluation and none once it stops."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import OperationalError
from django.utils import timezone

from alerts import tasks, watchdog
from alerts.models import Evaluation
from alerts.notify import services
from tests.alerts.notify_helpers import T0, make_channel, send_all
from tests.alerts.test_notify_alertmanager import (
    CONFIG,
    RESOLVE_TIMEOUT,
    keep_cycling_for,
    keep_cycling_until,
)
from tests.alerts.validators import valid_webhook
from tests.support.receivers import SERVER_ERROR, run_alertmanager, slow, start_receiver

pytestmark = pytest.mark.django_db
SECRET_PATH = "/ping/3f1d2c9e-5b7a-4e21-9c0d-8a6b1e2f4d7c"


@pytest.fixture(autouse=True)
def _fast(settings: pytest.FixtureRequest) -> None:
    settings.ALERTS_NOTIFY_ALERTMANAGER_RESEND_SECONDS = 1  # type: ignore[attr-defined]
    settings.EXTERNAL_URL = "http://cw.example"  # type: ignore[attr-defined]
    settings.ALERTS_WATCHDOG_MAX_AGE_SECONDS = 180  # type: ignore[attr-defined]


def watchdogs(alertmanager) -> list[dict]:  # noqa: ANN001
    return [a for a in alertmanager.alerts() if a["labels"].get("alertname") == "watchdog"]


def test_the_watchdog_reaches_alertmanager_stays_firing_and_times_out_when_evaluation_stops(
    tmp_path: Path,
) -> None:
    with run_alertmanager(tmp_path, CONFIG) as alertmanager, start_receiver() as webhook:
        make_channel("alertmanager", alertmanager.url, watchdog=True)
        make_channel("webhook", webhook.url)  # did not opt in: never sent the watchdog
        tasks.evaluate_alerts()
        keep_cycling_until("the watchdog in Alertmanager", lambda: watchdogs(alertmanager))
        keep_cycling_for(2.5 * RESOLVE_TIMEOUT)  # past resolve_timeout: re-sent, so still firing
        (alive,) = watchdogs(alertmanager)
        assert alive["status"]["state"] == "active"
        assert alive["labels"] == {"alertname": "watchdog", "severity": "info"}
        assert "dead man's switch" in alive["annotations"]["summary"]
        # Evaluation stops: the newest one ages past the max age; Alertmanager times it out.
        Evaluation.objects.update(started_at=timezone.now() - timedelta(seconds=181))
        keep_cycling_until("the watchdog gone", lambda: watchdogs(alertmanager) == [])
        assert webhook.requests == []


def test_a_webhook_channel_gets_the_watchdog_again_every_repeat_interval(settings) -> None:  # noqa: ANN001
    with start_receiver() as webhook:
        make_channel("webhook", webhook.url, watchdog=True, min_severity="critical",
                     group_wait=timedelta(seconds=0), repeat_interval=timedelta(minutes=10))  # fmt: skip
        tasks.evaluate_alerts()
        start = T0  # in the past: what the flushes write is due at once
        for minutes in (0, 5, 10, 20):
            at = start + timedelta(minutes=minutes)
            Evaluation.objects.update(
                started_at=at - timedelta(seconds=30)
            )  # evaluation keeps running
            services.flush(at)
            send_all()
        services.flush(start + timedelta(minutes=31))  # 11 min without an evaluation: silence
        send_all()
        bodies = [r.json() for r in webhook.requests]
        assert len(bodies) == 3  # at 0, 10 and 20 minutes: the repeat interval
        for body in bodies:
            valid_webhook(body)
            assert [a["labels"]["alertname"] for a in body["alerts"]] == ["watchdog"]


def test_one_heartbeat_per_successful_evaluation_and_none_when_evaluation_fails(
    settings,
    monkeypatch,
    caplog,  # noqa: ANN001
) -> None:
    with start_receiver() as receiver:
        settings.HEARTBEAT_URL = receiver.url + SECRET_PATH
        for _ in range(3):
            tasks.evaluate_alerts()
        assert [(r.method, r.path) for r in receiver.requests] == [("POST", SECRET_PATH)] * 3
        monkeypatch.setattr(tasks.services, "evaluate", _broken)
        with pytest.raises(OperationalError):
            tasks.evaluate_alerts.run()
        assert len(receiver.requests) == 3  # evaluation stopped: no ping


def test_a_failing_or_slow_heartbeat_is_logged_without_its_secret(settings, caplog) -> None:  # noqa: ANN001
    settings.HEARTBEAT_TIMEOUT_SECONDS = 0.5
    with start_receiver(SERVER_ERROR, slow(3.0)) as receiver, caplog.at_level(logging.WARNING):
        settings.HEARTBEAT_URL = receiver.url + SECRET_PATH
        assert watchdog.ping_heartbeat() is False
        assert watchdog.ping_heartbeat() is False  # the whole request ends at its deadline
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "answered 500" in logged and "failed" in logged
    assert SECRET_PATH[-20:] not in logged and "…4d7c" in logged


def _broken(**_: object) -> None:
    raise OperationalError("the database went away")
