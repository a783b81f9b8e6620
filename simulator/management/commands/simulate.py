"""`manage.py simulate serve|history`: the cluster simulator's live and history modes."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from simulator import cli


class Command(BaseCommand):
    # A standalone tool: it needs neither the database nor the product apps to be configured.
    requires_system_checks: list[str] = []
    help = "Simulate a GPU training cluster: serve live exporter targets, or write history."

    def add_arguments(self, parser: CommandParser) -> None:
        modes = parser.add_subparsers(dest="mode", required=True)
        serve = modes.add_parser("serve", help="serve every exporter target over HTTP")
        cli.add_common_arguments(serve)
        serve.add_argument("--host", default="127.0.0.1")
        serve.add_argument("--port", type=int, default=9400)
        serve.add_argument(
            "--advertise", help="host:port written into file_sd (default: bound address)"
        )
        serve.add_argument("--write-file-sd", help="write Prometheus file_sd JSON here")
        serve.add_argument("--write-prometheus-config", help="write a prometheus.yml here")
        serve.add_argument(
            "--scrape-interval",
            default="15s",
            help='written into prometheus.yml: "15s", or per exporter "dcgm=15s,ib=60s,30s"',
        )
        history = modes.add_parser("history", help="write OpenMetrics for promtool")
        cli.add_common_arguments(history)
        history.add_argument("--hours", type=float, default=24.0)
        history.add_argument("--step", type=float, default=60.0, help="seconds between samples")
        history.add_argument(
            "--scrape-interval",
            default="",
            help='per exporter, overriding --step: "dcgm=15s,ib=60s" (dcgm, node_ib, treydock, '
            "ib, ksm, kueue, checkpoints)",
        )
        history.add_argument("--end", type=cli.parse_time, help="ISO time (default: now)")
        history.add_argument("--out", required=True)
        history.add_argument("--families", default="key", help='"key", "all" or a comma list')
        for sub in (serve, history):
            sub.formatter_class = argparse.ArgumentDefaultsHelpFormatter

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["mode"] == "serve":
                cli.run_serve(options, self.stdout.write)
            else:
                cli.run_history(options, self.stdout.write)
        except (ValueError, LookupError) as exc:
            raise CommandError(str(exc)) from exc
