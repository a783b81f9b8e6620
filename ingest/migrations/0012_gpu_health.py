"""GPU hardware health columns on the raw GPU samples, and the partial index of unhealthy rows.

``ecc_dbe_vol`` (volatile double-bit ECC errors since the last GPU reset, as read),
``pcie_replay`` (PCIe replays over the step), ``row_remap_failure`` /
``row_remap_pending`` (0/1 flags) and ``clock_events`` (DCGM's clock-event bitmask):
docs/dcgm.md "Hardware health". ``real`` columns: whole counts and a 9-bit mask are
exact in float4. Added on the partitioned parent, so every partition has them; not rolled up.

The index holds the rows the hardware rules read (``alerts.queries.GPU_HEALTH``): its
predicate must match that query with the default throttle mask, 232 = SW_THERMAL |
HW_THERMAL | HW_SLOWDOWN | HW_POWER_BRAKE (0x20 | 0x40 | 0x08 | 0x80).
"""

from __future__ import annotations

from django.db import migrations

COLUMNS = ("ecc_dbe_vol", "pcie_replay", "row_remap_failure", "row_remap_pending", "clock_events")
PREDICATE = (
    "ecc_dbe_vol > 0 OR pcie_replay > 0 OR row_remap_failure > 0 OR row_remap_pending > 0"
    " OR (clock_events::int & 232) <> 0"
)


class Migration(migrations.Migration):
    dependencies = [("ingest", "0011_ibsample_wait_share_index")]

    operations = [
        migrations.RunSQL(
            sql="ALTER TABLE ingest_gpusample "
            + ", ".join(f"ADD COLUMN {column} real" for column in COLUMNS)
            + ";",
            reverse_sql="ALTER TABLE ingest_gpusample "
            + ", ".join(f"DROP COLUMN {column}" for column in COLUMNS)
            + ";",
        ),
        migrations.RunSQL(
            sql=f"CREATE INDEX ingest_gpusample_health_ts ON ingest_gpusample (ts) WHERE {PREDICATE};",
            reverse_sql="DROP INDEX IF EXISTS ingest_gpusample_health_ts;",
        ),
    ]
