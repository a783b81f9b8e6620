"""Hot IB samples in compacted history's encodings (``ingest.ib_encoded``).

Creates ``ingest_ibencoded`` (partitioned by day; partitions are made as ingest writes) and
gives ``ingest_ib_rows`` a branch reading it; the view ``ingest_ibhot`` (model
``IbHotSample``) shows every hot IB sample. Instant on an existing database: its float8
rows stay in ``ingest_ibsample``, read and compacted as before.
"""

from __future__ import annotations

from django.db import migrations, models

from ingest import ib_encoded
from ingest.history import IB_HISTORY, function_sql


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0018_gpu_step_rows"),
    ]

    operations = [
        migrations.RunSQL(
            sql=ib_encoded.table_sql()
            + ib_encoded.LAYOUT.view_sql()
            + function_sql(IB_HISTORY, encoded=ib_encoded.LAYOUT.reader_sql()),
            reverse_sql=function_sql(IB_HISTORY)
            + f"DROP VIEW {ib_encoded.VIEW}; DROP TABLE {ib_encoded.TABLE} CASCADE;",
        ),
        migrations.CreateModel(
            name="IbHotSample",
            fields=[
                ("tx_bytes", models.FloatField(help_text="bytes/s", null=True)),
                ("rx_bytes", models.FloatField(help_text="bytes/s", null=True)),
                ("tx_packets", models.FloatField(help_text="packets/s", null=True)),
                ("rx_packets", models.FloatField(help_text="packets/s", null=True)),
                ("xmit_wait", models.FloatField(help_text="ticks/s", null=True)),
                ("symbol_errors", models.FloatField(help_text="increase over the step", null=True)),
                ("link_downed", models.FloatField(help_text="increase over the step", null=True)),
                (
                    "link_error_recovery",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                ("rcv_errors", models.FloatField(help_text="increase over the step", null=True)),
                (
                    "local_link_integrity",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                (
                    "excessive_buffer_overrun",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                ("state", models.SmallIntegerField(help_text="4 = active", null=True)),
                ("phys_state", models.SmallIntegerField(help_text="5 = LinkUp", null=True)),
                ("rate", models.FloatField(help_text="link capacity, bytes/s", null=True)),
                (
                    "saturated",
                    models.SmallIntegerField(
                        default=0, help_text="bitmask of pegged 32-bit counters"
                    ),
                ),
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "port_id",
                        "ts",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("ts", models.DateTimeField()),
            ],
            options={
                "db_table": "ingest_ibhot",
                "managed": False,
            },
        ),
    ]
