"""The partial index of waiting ports in real units: ib_congestion's candidates (alerts 0003).

``ib_congestion`` now judges the share of a link's bandwidth lost to waiting
(xmit_wait increments/s × 8 bytes ÷ rate, see docs/alerts.md), and fetches the
ports that lost at least ``lost_share_min / peer_ratio_min`` (0.02 / 4) of their
rate: ``xmit_wait >= 0.000625 * rate``. The old index (``xmit_wait >= 100000``, an
absolute rate in invented 1 µs ticks) held every busy port, since load alone
makes a busy port wait more than that. The predicate text must equal the rule's
prefilter with the default params for the planner to use it (other params: a
scan, same result). Saturated rows stay in it for ``ib_counter_saturated``.
"""

from __future__ import annotations

from django.db import migrations

OLD = "saturated <> 0 OR xmit_wait >= 100000"
NEW = "saturated <> 0 OR xmit_wait >= 0.000625 * rate"


def _create(predicate: str) -> str:
    return (
        "DROP INDEX IF EXISTS ingest_ibsample_wait_ts;"
        f" CREATE INDEX ingest_ibsample_wait_ts ON ingest_ibsample (ts) WHERE {predicate};"
    )


class Migration(migrations.Migration):
    dependencies = [("ingest", "0010_skipped_reasons")]

    operations = [migrations.RunSQL(sql=_create(NEW), reverse_sql=_create(OLD))]
