"""Compacted history of the raw GPU and IB samples (``ingest.history``, ``ingest.compaction``).

Creates the history tables (partitioned by day on ``hour``; partitions are made by
compaction), the reader functions every read path goes through (``ingest_gpu_rows``,
``ingest_ib_rows``: hot rows and history alike) and the per-day progress table. An
existing database keeps its hot rows as they are: ``manage.py compact_history`` (with a
progress bar, resumable: every hour commits on its own) or the beat task converts them in
place, oldest first.
"""

from __future__ import annotations

from django.db import migrations, models

from ingest.history import GPU_HISTORY, IB_HISTORY, function_sql, table_sql

SQL = "".join(table_sql(t) + function_sql(t) for t in (GPU_HISTORY, IB_HISTORY))
REVERSE = "".join(
    f"DROP FUNCTION IF EXISTS {t.function}(timestamptz, timestamptz, integer, integer);"
    f"DROP TABLE IF EXISTS {t.history} CASCADE;"
    for t in (GPU_HISTORY, IB_HISTORY)
)


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0013_run_workloads"),
    ]

    operations = [
        migrations.RunSQL(sql=SQL, reverse_sql=REVERSE),
        migrations.CreateModel(
            name="Compaction",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "table",
                    models.CharField(
                        help_text="the hot table, e.g. ingest_gpusample", max_length=32
                    ),
                ),
                ("day", models.DateField(help_text="the partition's day (UTC)")),
                (
                    "compacted_until",
                    models.DateTimeField(help_text="every hour before this is compacted"),
                ),
                (
                    "high_water",
                    models.DateTimeField(help_text="hours before this may have history rows"),
                ),
                (
                    "rows",
                    models.BigIntegerField(
                        default=0, help_text="hot rows moved into history, total"
                    ),
                ),
                (
                    "leftover",
                    models.BigIntegerField(
                        default=0,
                        help_text="rows left hot (off the step grid or out of an encoding's range)",
                    ),
                ),
                (
                    "seconds",
                    models.FloatField(default=0.0, help_text="time spent compacting, total"),
                ),
                (
                    "finished_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="when the emptied hot partition was truncated",
                        null=True,
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("table", "day"), name="uniq_compaction_day")
                ],
            },
        ),
    ]
