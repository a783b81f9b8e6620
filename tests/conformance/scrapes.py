"""Exporter exposition fixtures → a real Prometheus (promtool backfill) → ingest.

A fixture file holds one scrape exactly as the exporter writes it (text format,
# HELP / # TYPE included). ``backfilled`` repeats each scrape at every 30 s step of
its span, adds the ``job`` / ``instance`` labels Prometheus attaches, and backfills
the result with ``promtool tsdb create-blocks-from openmetrics``. Type lines are
dropped there: OpenMetrics wants ``_total`` on counters, which dcgm-exporter's
``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` lacks; the stored samples are the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.test import override_settings

from ingest.prometheus import PrometheusClient
from ingest.services import ingest_all
from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus

FIXTURES = Path(__file__).parent / "fixtures"
STEP = 30
#: Pinned epoch of every conformance history (no dependence on the time of day).
T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC).timestamp()
RETENTION_DAYS = 36500


@dataclass(frozen=True)
class Scrape:
    """One fixture served from ``start`` (inclusive) to ``end`` (exclusive), unix seconds."""

    fixture: str
    start: float
    end: float
    job: str
    instance: str


def sample_lines(text: str) -> list[str]:
    """The sample lines of an exposition (comments and blank lines dropped)."""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def with_target(line: str, job: str, instance: str, ts: float) -> str:
    """``name{labels} value`` → ``name{labels,job,instance} value ts`` (OpenMetrics sample)."""
    target = f'job="{job}",instance="{instance}"'
    if "{" in line:
        head, _, rest = line.partition("{")
        labels, _, value = rest.rpartition("} ")
        return f"{head}{{{labels},{target}}} {value.strip()} {ts:.0f}"
    name, _, value = line.partition(" ")
    return f"{name}{{{target}}} {value.strip()} {ts:.0f}"


def openmetrics(scrapes: Sequence[Scrape]) -> str:
    """Every scrape at every step of its span, grouped by metric name, ``# EOF`` last."""
    by_name: dict[str, list[str]] = {}
    for scrape in scrapes:
        lines = sample_lines((FIXTURES / scrape.fixture).read_text())
        ts = scrape.start
        while ts < scrape.end:
            for line in lines:
                name = line.partition("{")[0].partition(" ")[0]
                by_name.setdefault(name, []).append(
                    with_target(line, scrape.job, scrape.instance, ts)
                )
            ts += STEP
    out = [line for name in by_name for line in by_name[name]]
    return "\n".join([*out, "# EOF", ""])


@contextmanager
def backfilled(workdir: Path, scrapes: Sequence[Scrape]) -> Iterator[PrometheusProcess]:
    """A Prometheus whose TSDB holds the scrapes (stopped by PID afterwards)."""
    require_prometheus()
    source = workdir / "history.om"
    source.write_text(openmetrics(scrapes))
    tsdb = workdir / "tsdb"
    create_blocks(source, tsdb)
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\n")
    prometheus = PrometheusProcess(config, tsdb).start()
    try:
        yield prometheus
    finally:
        prometheus.stop()


def at(seconds: float) -> datetime:
    """Unix seconds → aware UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def ingest(prometheus: PrometheusProcess, families: list[str], since: float, until: float) -> None:
    """One ingest cycle of ``families`` over (since, until]; every family must succeed.

    Ingest never reads further back than Prometheus' retention from now; the pinned epoch
    is older than that, so the retention setting is widened to cover it.
    """
    with override_settings(INGEST_PROMETHEUS_RETENTION_DAYS=RETENTION_DAYS):
        outcomes = ingest_all(
            since=at(since),
            until=at(until),
            client=PrometheusClient(prometheus.url),
            families=families,
        )
    assert [(o.family, o.status) for o in outcomes] == [(f, "ok") for f in families], [
        o.error for o in outcomes
    ]
