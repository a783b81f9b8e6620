"""``python manage.py coverage``: which families and metrics Prometheus has, and how to fix gaps."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.coverage import CoverageReport, FamilyStatus, collect
from ingest.prometheus import PrometheusClient, PrometheusError

MARK = {"ok": "OK", "partial": "PARTIAL", "missing": "MISSING"}


def render_table(report: CoverageReport) -> str:
    """The report as a plain-text table, one block per family."""
    lines = [f"Coverage of {report.prometheus or 'Prometheus'}", ""]
    for family in report.families:
        lines += _family_block(family)
    lines += identity_block(report)
    return "\n".join(lines)


def identity_block(report: CoverageReport) -> list[str]:
    """Node identity: per exporter, how its series map to nodes, what maps to none and the fix."""
    lines = ["Node identity", f"    {report.identity_note}"]
    for exporter in report.identity:
        lines.append(f"    {exporter.job} ({exporter.family}): {exporter.series} series")
        for group in exporter.mapped:
            lines.append(f"        mapped {group.series}: {group.reason}")
        for group in [*exporter.unresolved, *exporter.suspect]:
            status = "UNRESOLVED" if group in exporter.unresolved else "SUSPECT"
            lines.append(f"        {status} {group.series}: {group.reason}")
            lines += [f"            e.g. {example}" for example in group.examples]
            lines.append(f"            fix: {group.fix}")
    lines.append("")
    return lines


def _family_block(family: FamilyStatus) -> list[str]:
    dialect = f" [{family.dialect}]" if family.dialect else ""
    lines = [f"{MARK[family.status]:<8} {family.title} ({family.family}){dialect}"]
    if family.cause:
        lines += [f"         cause: {family.cause}", f"         fix:   {family.fix}"]
    width = max(len(m.name) for m in family.metrics)
    for metric in family.metrics:
        found = "found" if metric.found else "MISSING"
        kind = "required" if metric.required else "optional"
        nodes = "" if metric.nodes is None else f"{metric.nodes} nodes"
        lines.append(f"    {metric.name:<{width}}  {found:<7}  {kind:<8}  {nodes}")
        if not metric.found and metric.cause and metric.cause != family.cause:
            lines += [f"        cause: {metric.cause}", f"        fix:   {metric.fix}"]
    for interval in family.scrape_intervals:
        every = "unknown" if interval.seconds is None else f"{interval.seconds:g} s"
        lines.append(f"    scrape interval: {interval.job or '(no job)'} every {every}")
    lines += [f"    note: {note}" for note in family.notes]
    lines.append("")
    return lines


class Command(BaseCommand):
    help = "List each ingest family and metric as found / missing, with the likely cause and fix."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", help="Prometheus URL (default: PROMETHEUS_URL)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args: Any, **options: Any) -> None:
        client = PrometheusClient(options.get("url"))
        try:
            report = collect(client)
        except PrometheusError as exc:
            raise CommandError(f"cannot query Prometheus: {exc}") from exc
        report.prometheus = client.shown_url  # never the credentials a URL may carry
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict(), indent=2))
        else:
            self.stdout.write(render_table(report))
