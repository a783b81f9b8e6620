"""Hourly heatmap tiles: per metric, hour and node the twelve 5-minute values of that hour.

Unmanaged like the other time-series tables: this migration owns the SQL, the partitions
(10 days wide, like the rollups, and dropped with them) are made on demand by
``ingest.partitions``. The key leads with (metric, hour), how a heatmap reads them: one
metric over a range of hours, all nodes. Node rollups already stored are folded in once.
"""

from __future__ import annotations

from datetime import timedelta

import django.contrib.postgres.fields
from django.db import migrations, models

HEATMAP_TILE = """
CREATE TABLE ingest_heatmaptile (
    hour timestamptz NOT NULL, node_id integer NOT NULL, mask smallint NOT NULL,
    metric text NOT NULL, cells double precision[] NOT NULL,
    PRIMARY KEY (metric, hour, node_id)
) PARTITION BY RANGE (hour);
"""


def backfill(apps: object, schema_editor: object) -> None:
    """Tile the node rollups already stored (nothing to do on a fresh database)."""
    from ingest import rollups

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(ts), max(ts) FROM ingest_noderollup")
        low, high = cursor.fetchone()
    day = timedelta(days=1)
    if low is not None:
        rollups.ensure_partitions(low, high, rollups.ROLLUP_TABLES)
    while low is not None and low <= high:  # a day at a time: months of rollups may be stored
        for family in ("gpu", "ib"):
            rollups.refresh_tiles(family, low, min(low + day, high + rollups.BUCKET))
        low += day


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0006_sample_event_indexes"),
    ]

    operations = [
        migrations.RunSQL(
            sql=HEATMAP_TILE, reverse_sql="DROP TABLE IF EXISTS ingest_heatmaptile CASCADE;"
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.CreateModel(
            name="HeatmapTile",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "metric",
                        "hour",
                        "node_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                (
                    "metric",
                    models.CharField(
                        help_text="key of ingest.heatmap_metrics.HEATMAP_METRICS", max_length=32
                    ),
                ),
                ("hour", models.DateTimeField(help_text="start of the hour (UTC)")),
                (
                    "mask",
                    models.SmallIntegerField(help_text="bit k: the node had data in bucket k"),
                ),
                (
                    "cells",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=models.FloatField(null=True), help_text="float8[12]", size=12
                    ),
                ),
            ],
            options={
                "db_table": "ingest_heatmaptile",
                "managed": False,
            },
        ),
    ]
