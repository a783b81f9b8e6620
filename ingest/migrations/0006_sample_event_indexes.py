"""Partial indexes on the rare sample rows the alert rules look for.

Alert evaluation reads, over windows of 10 min to 1 h: IB rows where an error
counter increased or the port was not active (``ib_port_errors``,
``ib_link_flap``), GPU rows where an NVLink CRC counter increased
(``nvlink_errors``), and the candidates of two dense rules: GPUs busy with idle
tensor cores (``gpu_tensor_drift``) and ports waiting or with a pegged counter
(``ib_congestion``, ``ib_counter_saturated``). Those rows are rare, so an index
on ``ts`` holding only them turns each of these reads from a scan of every
sample in the window into a few index probes, and costs ingest next to nothing.

The predicates match ``alerts.queries`` (for the two dense rules: their prefilter
with the default thresholds). The planner uses such an index only when it can
prove the query's condition implies the index's, so a stricter threshold still
uses it and a looser one falls back to a scan: the result is the same either way.
Created on the partitioned parents, so every partition, present and future, has them.
"""

from __future__ import annotations

from django.db import migrations

INDEXES = {
    "ingest_ibsample_errors_ts": (
        "ingest_ibsample",
        "symbol_errors > 0 OR rcv_errors > 0 OR local_link_integrity > 0"
        " OR excessive_buffer_overrun > 0 OR link_downed > 0 OR link_error_recovery > 0"
        " OR state <> 4",
    ),
    "ingest_ibsample_wait_ts": ("ingest_ibsample", "saturated <> 0 OR xmit_wait >= 100000"),
    "ingest_gpusample_nvlink_ts": (
        "ingest_gpusample",
        "nvlink_crc_flit > 0 OR nvlink_crc_data > 0",
    ),
    # ingest.drift.HUNG_GPU.predicate(), frozen here (tests/ingest/test_drift.py compares them)
    "ingest_gpusample_drift_ts": ("ingest_gpusample", "util >= 90 AND tensor <= 0.05"),
}


class Migration(migrations.Migration):
    dependencies = [("ingest", "0005_shardcursor")]

    operations = [
        migrations.RunSQL(
            sql=f"CREATE INDEX {name} ON {table} (ts) WHERE {predicate};",
            reverse_sql=f"DROP INDEX IF EXISTS {name};",
        )
        for name, (table, predicate) in INDEXES.items()
    ]
