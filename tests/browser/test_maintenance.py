"""Acceptance 5: maintenance in Chromium — on, the node shows the state and the commands; off, silence expired."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.utils import timezone

from alerts.models import NodeMaintenance, Silence
from tests.alerts import seed
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
NODE = "gpu-017 'x'"  # untrusted text: quotes and a space, shell-quoted in the commands


def test_maintenance_on_shows_state_and_commands_off_expires_the_silence(
    browser,
    asgi_server,
    staff_user,
    screenshot,  # noqa: ANN001
) -> None:
    seed.nodes([NODE, "gpu-018"], ports=0)
    page = log_in(browser, asgi_server.url, staff_user.username, PASSWORD)
    page.goto(f"/nodes/{quote(NODE, safe='')}/")
    assert page.locator("#maintenance-state").count() == 0
    page.fill("#maintenance-comment", "replacing GPU 3 (ticket 4711)")
    page.click("#maintenance-start")
    page.wait_for_selector("#maintenance-state")
    assert page.inner_text("#maintenance-state") == "in maintenance"
    commands = page.locator("#maintenance code").all_inner_texts()
    assert commands == [
        "kubectl cordon 'gpu-017 '\"'\"'x'\"'\"''",
        "kubectl drain 'gpu-017 '\"'\"'x'\"'\"'' --ignore-daemonsets --delete-emptydir-data",
        "kubectl uncordon 'gpu-017 '\"'\"'x'\"'\"''",
    ]
    (silence,) = Silence.objects.all()
    assert (silence.matchers, silence.ends_at) == (
        [{"name": "node", "op": "=", "value": NODE}],
        None,
    )
    screenshot(page, "maintenance-on")
    page.goto("/nodes/")
    row = page.locator("#node-table tr", has_text="gpu-017")
    assert row.locator(".badge.maintenance").inner_text() == "in maintenance"
    assert (
        page.locator("#node-table tr", has_text="gpu-018").locator(".badge.maintenance").count()
        == 0
    )
    screenshot(page, "maintenance-node-list")

    page.goto(f"/nodes/{quote(NODE, safe='')}/")
    page.click("#maintenance-end")
    page.wait_for_selector("#maintenance-start")
    assert page.locator("#maintenance-state").count() == 0
    silence.refresh_from_db()
    assert silence.ends_at is not None and silence.ends_at <= timezone.now()
    assert NodeMaintenance.objects.get().ended_at is not None
    screenshot(page, "maintenance-off")
    assert page.errors == [] and page.dialogs == []
