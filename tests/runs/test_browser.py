"""A run timeline in headless Chromium: checkpoints, a crash and its shaded lost work render."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.processes import AsgiServer

from .factories import build_run

SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_run_timeline_renders_checkpoints_crash_and_lost_work(
    asgi_server: AsgiServer, user: object, password: str
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    build_run(detail="OOMKilled <b>not bold</b>")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.goto(f"{asgi_server.url}/accounts/login/?next=/runs/team-a/llama-70b/")
            page.fill("#id_username", user.get_username())  # type: ignore[attr-defined]
            page.fill("#id_password", password)
            page.click("button[type=submit]")
            page.wait_for_url("**/runs/team-a/llama-70b/")
            page.wait_for_selector("#plot-timeline .main-svg", timeout=15_000)
            traces = page.evaluate("document.getElementById('plot-timeline').data.map(t => t.name)")
            shapes = page.evaluate(
                "document.getElementById('plot-timeline').layout.shapes.map(s => s.name || '')"
            )
            drawn = page.locator("#plot-timeline .shapelayer path").count()
            points = page.locator("#plot-timeline .scatterlayer .trace .points path").count()
            page.screenshot(path=str(SCREENSHOTS / "run_timeline.png"), full_page=True)
            assert "checkpoints" in traces and "restart" in traces
            assert "lost-redo" in shapes and "lost-restart" in shapes
            assert (
                drawn >= len(shapes) - 1 and points >= 5
            )  # 4 checkpoints + the crash marker at least
            assert page.locator("#ettr").inner_text() == "87%"
            assert "not bold" not in page.locator("#plot-timeline b").all_inner_texts()
        finally:
            browser.close()
