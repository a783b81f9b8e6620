"""Emptying the partitioned time-series tables, which Django's test flush skips (unmanaged models)."""

from __future__ import annotations

from django.db import connection

TIMESERIES_TABLES = (
    "ingest_gpusample", "ingest_ibsample", "ingest_kueuesample", "ingest_gpurollup", "ingest_ibrollup",
    "ingest_noderollup", "ingest_heatmaptile", "ingest_ibnodestep", "ingest_gpuhistory", "ingest_ibhistory",
    "ingest_nodetile",
)  # fmt: skip


def truncate_timeseries() -> None:
    """Empty every time-series table (all partitions)."""
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(TIMESERIES_TABLES)}")


def uses_transactional_db(fixturenames: list[str], marker_kwargs: dict[str, object]) -> bool:
    """Whether a test commits for real (so its rows outlive the test unless removed)."""
    transactional = {"transactional_db", "live_server", "django_db_serialized_rollback"}
    return bool(transactional & set(fixturenames)) or bool(marker_kwargs.get("transaction"))
