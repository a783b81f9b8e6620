"""Headless Chromium (the system one: never ``playwright install``) and a logged-in page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from the test
# (fixtures, writing an ingest cycle) are still plain synchronous code on that thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
SCREENSHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium per test module (its event loop must not outlive the module)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is needed: run `make test` (it installs the Debian package chromium)",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def screenshot() -> object:
    """``screenshot(page, name)`` saves artifacts/screenshots/<name>.png (full page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: object, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        return path

    return save


def log_in(
    browser: object,
    base_url: str,
    username: str,
    password: str,
    width: int = 1366,
    timezone_id: str | None = None,
) -> object:
    """A new page at laptop width, logged in through the real login form.

    ``timezone_id`` (e.g. "Pacific/Auckland") sets the browser's zone; default: the machine's.
    """
    zone = {"timezone_id": timezone_id} if timezone_id else {}
    context = browser.new_context(
        viewport={"width": width, "height": 900}, base_url=base_url, **zone
    )  # type: ignore[attr-defined]
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs  # an alert() from injected markup would land here
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    page.errors = errors
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(base_url + "/")
    return page
