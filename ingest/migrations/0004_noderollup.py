"""Per-node 5-minute rollups: one row per node and bucket for long-window heatmaps.

Unmanaged like the other time-series tables: this migration owns the SQL, the
partitions (10 days wide, like the other rollups) are made on demand by
``ingest.partitions``. Wide columns first so rows pack without padding; the key leads with ``ts``
because every reader scans a time range across all nodes (heap order = ts order).
Existing per-GPU / per-port rollups are folded in once, so a database migrated
with history shows it at once.
"""

from __future__ import annotations

from django.db import migrations, models

NODE_ROLLUP = """
CREATE TABLE ingest_noderollup (
    ts timestamptz NOT NULL, node_id integer NOT NULL,
    util double precision, tensor double precision, drift double precision,
    nvlink_bw double precision, nvlink_errors double precision,
    ib_tx double precision, ib_rx double precision, ib_xmit_wait double precision,
    ib_errors double precision,
    gpus smallint NOT NULL DEFAULT 0, util_gpus smallint NOT NULL DEFAULT 0,
    tensor_gpus smallint NOT NULL DEFAULT 0, drifted_gpus smallint NOT NULL DEFAULT 0,
    ports smallint NOT NULL DEFAULT 0, active_ports smallint NOT NULL DEFAULT 0,
    PRIMARY KEY (ts, node_id)
) PARTITION BY RANGE (ts);
CREATE INDEX ingest_noderollup_ts_brin ON ingest_noderollup USING brin (ts);
"""


def backfill(apps: object, schema_editor: object) -> None:
    """Fold the rollups already stored into node rollups (nothing to do on a fresh database)."""
    from ingest import rollups

    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(ts), max(ts) FROM ingest_gpurollup")
        gpu = cursor.fetchone()
        cursor.execute("SELECT min(ts), max(ts) FROM ingest_ibrollup")
        ib = cursor.fetchone()
    for family, (low, high) in (("gpu", gpu), ("ib", ib)):
        if low is not None:
            rollups.refresh_nodes(family, low, high + rollups.BUCKET)


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0003_family_health_totals"),
    ]

    operations = [
        migrations.RunSQL(
            sql=NODE_ROLLUP, reverse_sql="DROP TABLE IF EXISTS ingest_noderollup CASCADE;"
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.CreateModel(
            name="NodeRollup",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "node_id",
                        "ts",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("ts", models.DateTimeField(help_text="start of the 5-minute bucket")),
                (
                    "gpus",
                    models.SmallIntegerField(default=0, help_text="GPU rollup rows in the bucket"),
                ),
                (
                    "util_gpus",
                    models.SmallIntegerField(default=0, help_text="GPUs with a util value"),
                ),
                (
                    "tensor_gpus",
                    models.SmallIntegerField(default=0, help_text="GPUs with a tensor value"),
                ),
                (
                    "drifted_gpus",
                    models.SmallIntegerField(
                        default=0, help_text="GPUs busy by util, idle by tensor"
                    ),
                ),
                ("util", models.FloatField(help_text="mean GPU util, percent", null=True)),
                ("tensor", models.FloatField(help_text="mean tensor active, ratio", null=True)),
                (
                    "drift",
                    models.FloatField(help_text="mean of util/100 − tensor over GPUs", null=True),
                ),
                (
                    "nvlink_bw",
                    models.FloatField(help_text="NVLink bytes/s summed over GPUs", null=True),
                ),
                (
                    "nvlink_errors",
                    models.FloatField(help_text="NVLink error increases, all GPUs", null=True),
                ),
                (
                    "ports",
                    models.SmallIntegerField(default=0, help_text="port rollup rows in the bucket"),
                ),
                (
                    "active_ports",
                    models.SmallIntegerField(default=0, help_text="ports active all bucket long"),
                ),
                ("ib_tx", models.FloatField(help_text="bytes/s summed over ports", null=True)),
                ("ib_rx", models.FloatField(help_text="bytes/s summed over ports", null=True)),
                (
                    "ib_xmit_wait",
                    models.FloatField(help_text="ticks/s summed over ports", null=True),
                ),
                (
                    "ib_errors",
                    models.FloatField(help_text="IB error increases, all ports", null=True),
                ),
            ],
            options={
                "db_table": "ingest_noderollup",
                "managed": False,
            },
        ),
    ]
