"""The time-series tables: range-partitioned by day (raw) or by 10 days (rollups) on ``ts``.

The models are unmanaged (their state comes from 0001); this migration owns the
SQL. Ids are stored as ``integer`` and columns are ordered widest-first so rows
pack without alignment padding (the compact layout ingest aims for: see
``bench/bench_ingest.py``). Partitions themselves are created on demand by
``ingest.partitions`` for every window written, so an empty database migrates
instantly. A BRIN index on ``ts`` keeps cross-node time-range scans cheap at a
few kilobytes per partition.
"""

from __future__ import annotations

from django.db import migrations

GPU_VALUES = """
    util double precision, tensor double precision, sm double precision,
    dram double precision, power double precision, temp double precision,
    nvlink_bw double precision, nvlink_crc_flit double precision,
    nvlink_crc_data double precision, nvlink_replay double precision,
    nvlink_recovery double precision
"""
IB_VALUES = """
    tx_bytes double precision, rx_bytes double precision,
    tx_packets double precision, rx_packets double precision,
    xmit_wait double precision, symbol_errors double precision,
    link_downed double precision, link_error_recovery double precision,
    rcv_errors double precision, local_link_integrity double precision,
    excessive_buffer_overrun double precision, rate double precision,
    state smallint, phys_state smallint, saturated smallint NOT NULL DEFAULT 0
"""


def _gpu(table: str) -> str:
    return f"""
CREATE TABLE {table} (
    ts timestamptz NOT NULL, node_id integer NOT NULL, gpu smallint NOT NULL,
    {GPU_VALUES},
    PRIMARY KEY (node_id, gpu, ts)
) PARTITION BY RANGE (ts);
"""


def _ib(table: str) -> str:
    return f"""
CREATE TABLE {table} (
    ts timestamptz NOT NULL, port_id integer NOT NULL, node_id integer NOT NULL,
    {IB_VALUES},
    PRIMARY KEY (port_id, ts)
) PARTITION BY RANGE (ts);
"""


KUEUE = """
CREATE TABLE ingest_kueuesample (
    ts timestamptz NOT NULL, cluster_queue_id integer NOT NULL,
    pending_active double precision, pending_inadmissible double precision,
    admitted_active double precision, admitted double precision,
    wait_p50 double precision, wait_p95 double precision,
    PRIMARY KEY (cluster_queue_id, ts)
) PARTITION BY RANGE (ts);
"""

BRIN = """
CREATE INDEX ingest_gpusample_ts_brin ON ingest_gpusample USING brin (ts);
CREATE INDEX ingest_ibsample_ts_brin ON ingest_ibsample USING brin (ts);
CREATE INDEX ingest_gpurollup_ts_brin ON ingest_gpurollup USING brin (ts);
CREATE INDEX ingest_ibrollup_ts_brin ON ingest_ibrollup USING brin (ts);
"""

TABLES = (
    "ingest_gpusample",
    "ingest_gpurollup",
    "ingest_ibsample",
    "ingest_ibrollup",
    "ingest_kueuesample",
)


class Migration(migrations.Migration):
    dependencies = [("ingest", "0001_initial")]

    operations = [
        migrations.RunSQL(
            sql=_gpu("ingest_gpusample")
            + _gpu("ingest_gpurollup")
            + _ib("ingest_ibsample")
            + _ib("ingest_ibrollup")
            + KUEUE
            + BRIN,
            reverse_sql="".join(f"DROP TABLE IF EXISTS {table} CASCADE;" for table in TABLES),
        ),
    ]
