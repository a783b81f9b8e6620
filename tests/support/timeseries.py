"""Emptying the partitioned time-series tables, which Django's test flush skips (unmanaged models)."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

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


#: Rows the post_migrate signal would recreate identically after a flush: kept, not deleted.
KEPT_BY_FLUSH = frozenset({"django_migrations", "django_content_type", "auth_permission"})


def delete_committed_rows(connection: BaseDatabaseWrapper) -> None:
    """What Django's flush leaves a transactional test's database as, by DELETE instead of TRUNCATE.

    A TRUNCATE of the ~45 Django tables costs ~0.5-1.5 s (new files for every table and
    index), then post_migrate rebuilds content types and permissions: per transactional test,
    on a suite with ~100 of them. The tests leave a few rows, so DELETE is ~20 ms; every
    foreign key Django creates is DEFERRABLE INITIALLY DEFERRED, so the order does not
    matter within the one transaction (``non_deferrable_foreign_keys`` proves there is no other).
    """
    tables = sorted(
        set(connection.introspection.django_table_names(only_existing=True, include_views=False))
        - KEPT_BY_FLUSH
    )
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table in tables:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")


def non_deferrable_foreign_keys(connection: BaseDatabaseWrapper) -> list[str]:
    """Foreign keys that ``delete_committed_rows``' order could trip over (there must be none)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text || '.' || conname FROM pg_constraint"
            " WHERE contype = 'f' AND NOT condeferrable AND connamespace = 'public'::regnamespace"
            " ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]
