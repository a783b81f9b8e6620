"""Ingest test helpers shared by the ingest test modules."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.timeseries import TIMESERIES_TABLES, truncate_timeseries  # noqa: F401


@pytest.fixture(autouse=True)
def clean_timeseries(request: pytest.FixtureRequest) -> Iterator[None]:
    """Tests using the database start with empty time-series tables."""
    if request.node.get_closest_marker("django_db") is None:
        yield
        return
    request.getfixturevalue("db" if not _transactional(request) else "transactional_db")
    truncate_timeseries()
    yield


def _transactional(request: pytest.FixtureRequest) -> bool:
    marker = request.node.get_closest_marker("django_db")
    return bool(marker and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])))
