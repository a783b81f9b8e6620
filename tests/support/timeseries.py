"""Emptying the partitioned time-series tables, which Django's test flush skips (unmanaged models)."""

from __future__ import annotations

from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

TIMESERIES_TABLES = (
    "ingest_gpusample", "ingest_ibsample", "ingest_kueuesample", "ingest_gpurollup", "ingest_ibrollup",
    "ingest_noderollup", "ingest_heatmaptile", "ingest_ibnodestep", "ingest_gpuhistory", "ingest_ibhistory",
    "ingest_nodetile", "ingest_gpustep", "ingest_ibencoded",
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


#: alias → (table, rows as JSON text) the migrations wrote beyond KEPT_BY_FLUSH (the rule
#: configs of alerts' data migration), read once after the test database is migrated.
SEEDED: dict[str, list[tuple[str, list[str]]]] = {}


def remember_seeded_rows(connection: BaseDatabaseWrapper) -> None:
    """Keep what a freshly migrated test database holds, for ``delete_committed_rows`` to put back."""
    seeded = []
    with connection.cursor() as cursor:
        for table in _flushed_tables(connection):
            name = connection.ops.quote_name(table)
            cursor.execute(f"SELECT row_to_json(t)::text FROM {name} AS t")
            rows = [row[0] for row in cursor.fetchall()]
            if rows:
                seeded.append((name, rows))
    SEEDED[connection.alias] = seeded


def _flushed_tables(connection: BaseDatabaseWrapper) -> list[str]:
    return sorted(
        set(connection.introspection.django_table_names(only_existing=True, include_views=False))
        - KEPT_BY_FLUSH
    )


def delete_committed_rows(connection: BaseDatabaseWrapper) -> None:
    """A freshly migrated database again after a transactional test, by DELETE instead of TRUNCATE.

    A TRUNCATE of the ~45 Django tables costs ~0.5-1.5 s (new files for every table and
    index), then post_migrate rebuilds content types and permissions: per transactional test,
    on a suite with ~100 of them. The tests leave a few rows, so DELETE is ~20 ms; every
    foreign key Django creates is DEFERRABLE INITIALLY DEFERRED, so the order does not
    matter within the one transaction (``non_deferrable_foreign_keys`` proves there is no other).
    Unlike Django's flush, the rows the migrations seeded (``remember_seeded_rows``) are put
    back: a test that needs them must not depend on running before every committing test
    (under pytest-xdist, modules run in any order).
    """
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        for table in _flushed_tables(connection):
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(table)}")
        for name, rows in SEEDED.get(connection.alias, []):
            cursor.executemany(
                f"INSERT INTO {name} SELECT * FROM json_populate_record(NULL::{name}, %s::json)",
                [(row,) for row in rows],
            )


def non_deferrable_foreign_keys(connection: BaseDatabaseWrapper) -> list[str]:
    """Foreign keys that ``delete_committed_rows``' order could trip over (there must be none)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text || '.' || conname FROM pg_constraint"
            " WHERE contype = 'f' AND NOT condeferrable AND connamespace = 'public'::regnamespace"
            " ORDER BY 1"
        )
        return [row[0] for row in cursor.fetchall()]
