"""Both overlays rendered once per test session."""

from __future__ import annotations

import pytest

from .manifests import OVERLAYS, Object, render


@pytest.fixture(scope="session")
def rendered() -> dict[str, list[Object]]:
    """overlay -> its rendered objects."""
    return {overlay: render(overlay) for overlay in OVERLAYS}


@pytest.fixture(params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def objects(rendered: dict[str, list[Object]], overlay: str) -> list[Object]:
    """The rendered objects of one overlay (the test runs for each)."""
    return rendered[overlay]
