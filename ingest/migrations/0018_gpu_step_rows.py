"""Hot GPU samples as step rows (``ingest.gpu_steps``): one row per node, step and 8 GPUs.

Creates ``ingest_gpustep`` (partitioned by day; partitions are made as ingest writes) and
gives ``ingest_gpu_rows`` a third branch reading it; the view ``ingest_gpuhot`` (model
``GpuHotSample``) shows every hot GPU sample per GPU. Instant on an existing database: its
per-GPU hot rows stay in ``ingest_gpusample``, which readers keep reading and compaction
keeps moving into history; ingest writes step rows from the next cycle on.
"""

from __future__ import annotations

from django.db import migrations, models

from ingest import gpu_steps
from ingest.history import GPU_HISTORY, function_sql


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0017_history_reader_branches"),
    ]

    operations = [
        migrations.RunSQL(
            sql=gpu_steps.table_sql()
            + gpu_steps.LAYOUT.view_sql()
            + function_sql(GPU_HISTORY, encoded=gpu_steps.LAYOUT.reader_sql()),
            reverse_sql=function_sql(GPU_HISTORY)
            + f"DROP VIEW {gpu_steps.VIEW}; DROP TABLE {gpu_steps.TABLE} CASCADE;",
        ),
        migrations.CreateModel(
            name="GpuHotSample",
            fields=[
                (
                    "util",
                    models.FloatField(help_text="DCGM_FI_DEV_GPU_UTIL, percent 0..100", null=True),
                ),
                (
                    "tensor",
                    models.FloatField(
                        help_text="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio 0..1", null=True
                    ),
                ),
                (
                    "sm",
                    models.FloatField(help_text="DCGM_FI_PROF_SM_ACTIVE, ratio 0..1", null=True),
                ),
                (
                    "dram",
                    models.FloatField(help_text="DCGM_FI_PROF_DRAM_ACTIVE, ratio 0..1", null=True),
                ),
                ("power", models.FloatField(help_text="W", null=True)),
                ("temp", models.FloatField(help_text="°C", null=True)),
                ("nvlink_bw", models.FloatField(help_text="bytes/s", null=True)),
                (
                    "nvlink_crc_flit",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                (
                    "nvlink_crc_data",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                ("nvlink_replay", models.FloatField(help_text="increase over the step", null=True)),
                (
                    "nvlink_recovery",
                    models.FloatField(help_text="increase over the step", null=True),
                ),
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "node_id",
                        "gpu",
                        "ts",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("ts", models.DateTimeField()),
                ("gpu", models.SmallIntegerField()),
                (
                    "ecc_dbe_vol",
                    models.FloatField(
                        help_text="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL as read: DBEs since the last GPU reset",
                        null=True,
                    ),
                ),
                (
                    "pcie_replay",
                    models.FloatField(
                        help_text="DCGM_FI_DEV_PCIE_REPLAY_COUNTER: increase over the step",
                        null=True,
                    ),
                ),
                (
                    "row_remap_failure",
                    models.FloatField(
                        help_text="DCGM_FI_DEV_ROW_REMAP_FAILURE: 1 = row remapping failed",
                        null=True,
                    ),
                ),
                (
                    "row_remap_pending",
                    models.FloatField(
                        help_text="DCGM_FI_DEV_ROW_REMAP_PENDING: 1 = remaps wait for a GPU reset",
                        null=True,
                    ),
                ),
                (
                    "clock_events",
                    models.FloatField(
                        help_text="DCGM_FI_DEV_CLOCKS_EVENT_REASONS: bitmask of DCGM_CLOCKS_EVENT_REASON_*",
                        null=True,
                    ),
                ),
            ],
            options={
                "db_table": "ingest_gpuhot",
                "managed": False,
            },
        ),
    ]
