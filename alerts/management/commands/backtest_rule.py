"""``manage.py backtest_rule RULE --since 7d [--set key=value ...]``: what a rule would have fired."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alerts.backtest import backtest, parse_sets, parse_span
from alerts.overrides import parse_override
from alerts.rules import RuleConfigError


class Command(BaseCommand):
    help = (
        "Replay one rule with its settings (plus --set and per-pool / per-GPU-model --override) "
        "over stored history; changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("rule", help="rule id, e.g. gpu_tensor_drift")
        parser.add_argument("--since", default="7d", help="how far back: 30m, 12h, 7d (default 7d)")
        parser.add_argument(
            "--set", action="append", default=[], dest="sets", metavar="KEY=VALUE",
            help="override a param or for_seconds / keep_firing_for_seconds / severity (repeatable)",
        )  # fmt: skip
        parser.add_argument(
            "--override", action="append", default=[], dest="scoped", metavar="SCOPE=VALUE:KEY=VALUE,…",
            help="params for one pool or GPU model, e.g. pool=training:util_min=85 or "
                 "'gpu_model=NVIDIA H100 80GB HBM3:power_max_watts=250' (repeatable; over the stored ones)",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            scoped = [parse_override(text) for text in options["scoped"]]
            report = backtest(
                options["rule"], parse_span(options["since"]), parse_sets(options["sets"]),
                scoped=scoped,
            )  # fmt: skip
        except RuleConfigError as exc:
            raise CommandError(str(exc)) from None
        for line in report.lines():
            self.stdout.write(line)
        self.stdout.write(f"({report.seconds:.2f}s)")
