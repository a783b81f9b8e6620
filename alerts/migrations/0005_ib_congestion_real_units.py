"""ib_congestion's params are in real units now: rewrite the stored settings that were the old defaults.

The old params (``wait_share_min``, ``ticks_per_second``: xmit_wait over an
assumed 1 µs tick) no longer exist; a stored row still holding exactly the old
defaults gets the new defaults (docs/alerts.md). A row someone edited is left
alone: loading it fails validation, logs why, and the rule runs on its defaults.
"""

from __future__ import annotations

from django.db import migrations

OLD_DEFAULTS = {"wait_share_min": 0.1, "ticks_per_second": 1000000.0}
NEW_DEFAULTS = {
    "bytes_per_wait_increment": 8.0,
    "lost_share_min": 0.02,
    "peer_ratio_min": 4.0,
    "group_fraction": 0.75,
    "min_peers": 4,
}


def _rewrite(apps, old: dict, new: dict) -> None:  # noqa: ANN001 - migration signature
    RuleConfig = apps.get_model("alerts", "RuleConfig")
    RuleConfig.objects.filter(rule="ib_congestion", params=old).update(params=new)


def forwards(apps, schema_editor) -> None:  # noqa: ANN001
    _rewrite(apps, OLD_DEFAULTS, NEW_DEFAULTS)


def backwards(apps, schema_editor) -> None:  # noqa: ANN001
    _rewrite(apps, NEW_DEFAULTS, OLD_DEFAULTS)


class Migration(migrations.Migration):
    dependencies = [("alerts", "0004_notification_channels_pagerduty_email_silence_mirror")]

    operations = [migrations.RunPython(forwards, backwards)]
