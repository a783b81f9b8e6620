"""The drift thresholds are defined once (ingest/drift.py): the rule, the index and the rollup agree."""

from __future__ import annotations

import re

import pytest
from django.db import connection

from alerts.rules import settings_for
from ingest.drift import HUNG_GPU, IDLE_TENSOR_BUCKET
from ingest.heatmap_metrics import NODE_COUNTS
from ingest.history import GPU_HISTORY

pytestmark = pytest.mark.django_db


def test_the_drift_rule_defaults_are_the_hung_gpu_thresholds() -> None:
    params = settings_for("gpu_tensor_drift").params
    assert (params["util_min"], params["tensor_max"]) == (90.0, 0.05)
    assert (HUNG_GPU.util_min_percent, HUNG_GPU.tensor_max_ratio) == (90.0, 0.05)


def test_the_partial_drift_index_has_the_hung_gpu_predicate() -> None:
    # Migration 0006 writes the predicate as a literal (migrations are frozen): it must stay
    # the rule's default condition, or the rule's prefilter no longer reads the index.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ingest_gpusample_drift_ts'"
        )
        (definition,) = cursor.fetchone()
    bounds = re.search(r"util >= \(?([\d.]+)\)?.*tensor <= \(?([\d.]+)\)?", definition)
    assert bounds is not None, definition
    assert tuple(map(float, bounds.groups())) == (
        HUNG_GPU.util_min_percent,
        HUNG_GPU.tensor_max_ratio,
    )


def test_the_drift_mark_of_step_rows_and_history_has_the_hung_gpu_predicate() -> None:
    # GPU step rows and compacted history mark their drifting steps with this predicate; the
    # rule's prefilter reads only marked rows (ingest.gpu_steps, ingest.history).
    bit, predicate = GPU_HISTORY.marks["drift"]
    assert (bit, predicate) == (1, "util >= 90 AND tensor <= 0.05")
    assert (HUNG_GPU.util_min_percent, HUNG_GPU.tensor_max_ratio) == (90.0, 0.05)


def test_the_rollup_counts_idle_tensor_buckets_by_their_own_thresholds() -> None:
    assert (
        NODE_COUNTS["gpu"]["drifted_gpus"] == "count(*) FILTER (WHERE util >= 50 AND tensor <= 0.1)"
    )
    assert IDLE_TENSOR_BUCKET.predicate() == "util >= 50 AND tensor <= 0.1"
