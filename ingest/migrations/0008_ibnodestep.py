"""Per-node IB totals per scrape step (tx + rx bytes/s over the node's ports).

Unmanaged like the other time-series tables: partitions (daily, dropped with the raw
samples) are made on demand by ``ingest.partitions``. The key leads with ``ts``: the
alert rules read every node over a window of steps. The last day of raw IB samples
already stored is folded in once (older steps only matter to backtests).
"""

from __future__ import annotations

from datetime import timedelta

from django.db import migrations, models

IB_NODE_STEP = """
CREATE TABLE ingest_ibnodestep (
    ts timestamptz NOT NULL, node_id integer NOT NULL, bytes double precision NOT NULL,
    PRIMARY KEY (ts, node_id)
) PARTITION BY RANGE (ts);
"""


def backfill(apps: object, schema_editor: object) -> None:
    """Totals of the last day of raw IB samples (nothing to do on a fresh database)."""
    from ingest import rollups

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT max(ts) FROM ingest_ibsample")
        (high,) = cursor.fetchone()
    if high is not None:
        rollups.refresh_ib_node_steps(high - timedelta(days=1), high)


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0007_heatmaptile"),
    ]

    operations = [
        migrations.RunSQL(
            sql=IB_NODE_STEP, reverse_sql="DROP TABLE IF EXISTS ingest_ibnodestep CASCADE;"
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.CreateModel(
            name="IbNodeStep",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "ts",
                        "node_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("ts", models.DateTimeField()),
                (
                    "bytes",
                    models.FloatField(help_text="tx + rx bytes/s summed over the node's ports"),
                ),
            ],
            options={"db_table": "ingest_ibnodestep", "managed": False},
        ),
    ]
