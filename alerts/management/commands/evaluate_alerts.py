"""``manage.py evaluate_alerts``: evaluate every rule once, now."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from alerts.services import evaluate


class Command(BaseCommand):
    help = "Evaluate every alert rule once over the stored data and print what changed."

    def handle(self, *args: Any, **options: Any) -> None:
        result = evaluate(trigger="manual")
        self.stdout.write(
            f"{result.changes} change(s); firing {result.firing}, pending {result.pending}, "
            f"silenced {result.silenced}, inhibited {result.inhibited} "
            f"in {result.timings['total']:.3f}s (fetch {result.timings['fetch']:.3f}s)"
        )
