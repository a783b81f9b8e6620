"""A live page stays connected through 60 s of silence, then still receives the next update.

With the channel layer's Redis socket timeout equal to channels_redis's 5 s blocking poll,
every idle consumer raised TimeoutError and the browser was dropped every 5 s (issue 17 #5).
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime

import pytest

from alerts.events import alerts_changed
from core.live import publish
from tests.browser.conftest import log_in
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
IDLE_MS = 60_000
RECORD_EVENTS = """window.__events = [];
    document.addEventListener("live", (e) => window.__events.push(e.detail.type));"""


def test_a_live_page_survives_60_s_idle_then_gets_the_update(browser, asgi_server, user) -> None:  # noqa: ANN001
    # A zone 13 h off UTC: the page's "<event> at <time> UTC" must not be the browser's time.
    page = log_in(browser, asgi_server.url, user.username, PASSWORD, timezone_id="Pacific/Auckland")
    sockets: list[object] = []
    closed: list[str] = []
    page.on(
        "websocket", lambda ws: (sockets.append(ws), ws.on("close", lambda w: closed.append(w.url)))
    )
    page.add_init_script(RECORD_EVENTS)
    page.goto("/")
    page.wait_for_function("() => window.__events.includes('hello')")
    page.wait_for_timeout(IDLE_MS)
    assert (len(sockets), closed) == (1, [])

    event = alerts_changed(firing=0, pending=0, silenced=0, inhibited=0, changes=1,
                           evaluated_at="2026-06-01T12:00:00Z")  # fmt: skip
    publisher = threading.Thread(target=publish, args=(event,))  # off Playwright's loop
    publisher.start()
    publisher.join()
    page.wait_for_function("() => window.__events.includes('alerts.changed')", timeout=10_000)
    assert (len(sockets), closed) == (1, [])
    assert page.evaluate("() => window.__events") == ["hello", "alerts.changed"]
    shown = page.text_content("#live-last") or ""
    received = datetime.now(UTC)
    assert re.fullmatch(r"alerts\.changed at \d\d:\d\d:\d\d UTC", shown), shown
    hms = datetime.strptime(shown.split(" at ")[1], "%H:%M:%S UTC").time()
    seconds = (received - datetime.combine(received.date(), hms, UTC)).total_seconds() % 86_400
    assert seconds < 30, (shown, received)  # shown at most 30 s before it was read, in UTC
