"""Dashboard test data: a small cluster written through ingest's store."""

from __future__ import annotations

import pytest

from tests.dashboard.factories import Cluster, make_cluster


@pytest.fixture
def cluster(db: None) -> Cluster:
    """Four nodes (one drifting, one erring port, two with HTML names), one hour of 30 s samples."""
    return make_cluster()
