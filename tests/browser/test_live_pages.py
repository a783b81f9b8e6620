"""The alerts and runs pages refresh live, like the overview: the next event redraws them."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.events import alerts_changed
from core.live import publish
from ingest.events import ingest_committed
from tests.alerts.notify_helpers import make_alert
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD
from tests.runs.factories import build_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def send(event: object) -> None:
    publisher = threading.Thread(target=publish, args=(event,))  # off Playwright's loop
    publisher.start()
    publisher.join()


def test_the_runs_and_alerts_pages_redraw_after_their_events(browser, asgi_server, user) -> None:  # noqa: ANN001
    page = log_in(browser, asgi_server.url, user.username, PASSWORD)
    page.goto("/runs/")
    page.wait_for_function("() => document.querySelector('#live-status.up') !== null")
    assert "No runs match" in page.content()
    build_run("live-run", start=timezone.now() - timedelta(hours=2))
    send(ingest_committed(["kueue"], timezone.now().isoformat(), 1))  # not the runs family
    page.wait_for_timeout(1500)
    assert "live-run" not in page.content()
    send(ingest_committed(["runs"], timezone.now().isoformat(), 1))
    page.wait_for_selector("text=live-run", timeout=10_000)

    page.goto("/alerts/")
    page.wait_for_function("() => document.querySelector('#live-status.up') !== null")
    assert "gpu-077" not in page.content()
    make_alert("gpu-077")
    send(alerts_changed(firing=1, pending=0, silenced=0, inhibited=0, changes=1,
                        evaluated_at=timezone.now().isoformat()))  # fmt: skip
    page.wait_for_selector("#alert-table >> text=gpu-077", timeout=10_000)
    badge = page.locator("#alert-table .badge.critical").first
    assert badge.evaluate("el => getComputedStyle(el).whiteSpace") == "nowrap"
