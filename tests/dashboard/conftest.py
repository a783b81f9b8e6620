"""Dashboard test data: a small cluster written through ingest's store."""

from __future__ import annotations

import pytest

from tests.dashboard.factories import Cluster, make_cluster


@pytest.fixture
def cluster(db: None, request: pytest.FixtureRequest) -> Cluster:
    """Four nodes (one drifting, one erring port, two with HTML names), one hour of 30 s samples.

    The hour ends at the clock's "now": at the pinned epoch when the test asks for ``fixed_epoch``.
    """
    if "fixed_epoch" in request.fixturenames:
        request.getfixturevalue("fixed_epoch")
    return make_cluster()
