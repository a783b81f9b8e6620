"""The reader functions ``ingest_gpu_rows`` / ``ingest_ib_rows`` read compacted history in two
branches: hours wholly inside the bounds without a per-step test, and the hours on a bound
with one (``ingest.history.function_sql``). Same rows and values as 0014's body, fewer
computations per decoded step (bench/RESULTS.md "history reader branches").
"""

from __future__ import annotations

from django.db import migrations

from ingest.history import GPU_HISTORY, IB_HISTORY, function_sql


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0016_runs_move_to_runs_app"),
    ]

    operations = [
        # Reversing keeps this body: it returns what 0014's did.
        migrations.RunSQL(
            sql="".join(function_sql(t) for t in (GPU_HISTORY, IB_HISTORY)),
            reverse_sql=migrations.RunSQL.noop,
        ),
    ]
