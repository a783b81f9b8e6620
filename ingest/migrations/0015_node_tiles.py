"""Hourly node tiles: per node, GPU / IB device and hour, every rollup column of its buckets.

Unmanaged like the other time-series tables: this migration owns the SQL, the partitions
(10 days wide, dropped after ``INGEST_NODE_TILE_RETENTION_DAYS``) are made on demand by
``ingest.partitions``. The key leads with (node_id, family, hour), how the node page reads
them: one node's devices over a range of hours. Rollups already stored are tiled once (but
the newest bucket, as ingest leaves it).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import django.contrib.postgres.fields
from django.conf import settings
from django.db import migrations, models

NODE_TILE = """
CREATE TABLE ingest_nodetile (
    hour timestamptz NOT NULL, node_id integer NOT NULL, mask smallint NOT NULL,
    family text NOT NULL, device text NOT NULL, cells double precision[] NOT NULL,
    PRIMARY KEY (node_id, family, hour, device)
) PARTITION BY RANGE (hour);
"""


def backfill(apps: object, schema_editor: object) -> None:
    """Tile the rollups the retention keeps (nothing to do on a fresh database)."""
    from ingest import node_tiles, rollups

    day = timedelta(days=1)
    kept = datetime.now(UTC) - timedelta(days=settings.INGEST_NODE_TILE_RETENTION_DAYS, hours=1)
    for family in ("gpu", "ib"):
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"SELECT min(ts), max(ts) FROM ingest_{family}rollup")
            low, high = cursor.fetchone()
        if low is not None:
            low = max(low, rollups.bucket_start(kept))  # what the retention keeps
            rollups.ensure_partitions(low, high, rollups.ROLLUP_TABLES)
        while low is not None and low <= high:  # a day at a time: months may be stored
            node_tiles.refresh(family, low, min(low + day, high + rollups.BUCKET), end=high)
            low += day


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0014_compacted_history"),
    ]

    operations = [
        migrations.RunSQL(
            sql=NODE_TILE, reverse_sql="DROP TABLE IF EXISTS ingest_nodetile CASCADE;"
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.CreateModel(
            name="NodeTile",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "node_id",
                        "family",
                        "hour",
                        "device",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("family", models.CharField(help_text='"gpu" or "ib"', max_length=8)),
                ("hour", models.DateTimeField(help_text="start of the hour (UTC)")),
                (
                    "device",
                    models.CharField(
                        help_text='GPU index ("0") or IB device ("mlx5_0")', max_length=64
                    ),
                ),
                (
                    "mask",
                    models.SmallIntegerField(help_text="bit k: the device had data in bucket k"),
                ),
                (
                    "cells",
                    django.contrib.postgres.fields.ArrayField(
                        base_field=django.contrib.postgres.fields.ArrayField(
                            base_field=models.FloatField(null=True), size=None
                        ),
                        help_text="float8[12][columns]",
                        size=None,
                    ),
                ),
            ],
            options={"db_table": "ingest_nodetile", "managed": False},
        ),
    ]
