"""IB conformance fixtures → a few scrapes of history → promtool backfill → a real Prometheus.

A fixture is one scrape of a real exporter's text exposition (tests/conformance/fixtures/
ib_*.prom; each names the upstream files it was checked against). ``history`` replays it
as consecutive scrapes: scrape k holds the fixture's value plus ``grown(sample, k)``
(``by_series``: k × the series' delta per scrape; a pegged or idle counter has none), with the job/instance labels
a live scrape adds. The epoch is pinned, so nothing depends on the time of day.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.support.prometheus import PrometheusProcess, create_blocks, require_prometheus

FIXTURES = Path(__file__).parent / "fixtures"
EPOCH = datetime(2026, 11, 2, 6, 0, tzinfo=UTC).timestamp()  # pinned; a multiple of 30 s
STEP = 30
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})? (?P<value>\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Sample:
    """One exposition line: metric name, labels in their written order, the value as written."""

    name: str
    labels: tuple[tuple[str, str], ...]
    text: str

    @property
    def value(self) -> float:
        """The value as a number."""
        return float(self.text)

    def label(self, name: str) -> str:
        """One label's value ("" when absent)."""
        return dict(self.labels).get(name, "")


Growth = Callable[[Sample, int], float]


def parse(path: Path) -> list[Sample]:
    """The sample lines of a text exposition (comments, HELP and TYPE skipped)."""
    samples = []
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, line
        labels = tuple(_LABEL.findall(match["labels"] or ""))
        samples.append(Sample(match["name"], labels, match["value"]))
    return samples


def go_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'g', -1, 64)``: how client_golang writes sample values."""
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)
    neg = "-" if sign else ""
    if not -4 <= point - 1 < 6:  # shortest 'g' switches to %e at exponent >= 6 (eprec = 6)
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{neg}{body}e{'+' if point > 0 else '-'}{abs(point - 1):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{neg}{digits}{'0' * (point - len(digits))}"
    return f"{neg}{digits[:point]}.{digits[point:]}"


def constant(sample: Sample, k: int) -> float:
    """Every series constant."""
    return 0.0


def by_series(
    table: Mapping[tuple[str, str, str], float],
    key: str = "device",
    jumps: Mapping[tuple[str, str, str], tuple[int, float]] | None = None,
) -> Growth:
    """Growth at scrape k: k × {(metric, <key label>, port): delta}, plus one-off
    ``jumps`` {(metric, <key>, port): (from scrape, amount)}."""

    def grown(sample: Sample, k: int) -> float:
        series = (sample.name, sample.label(key), sample.label("port"))
        start, amount = (jumps or {}).get(series, (k + 1, 0.0))
        return k * table.get(series, 0.0) + (amount if k >= start else 0.0)

    return grown


def openmetrics(
    path: Path, job: str, instance: str, scrapes: int, grown: Growth = constant
) -> list[str]:
    """``scrapes`` scrapes of the fixture at EPOCH, EPOCH+STEP, … as OpenMetrics lines (no EOF).

    Lines are grouped by metric name (OpenMetrics forbids interleaving a family).
    """
    lines = []
    for sample in sorted(parse(path), key=lambda s: s.name):
        labels = ",".join(
            [f'{k}="{v}"' for k, v in sample.labels] + [f'job="{job}"', f'instance="{instance}"']
        )
        for k in range(scrapes):
            value = sample.value + grown(sample, k)
            lines.append(f"{sample.name}{{{labels}}} {value!r} {EPOCH + k * STEP:.0f}")
    return lines


def at(seconds: float) -> datetime:
    """A UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


def ingest_fixture_history(  # noqa: PLR0913 - the test's fixtures, passed through
    prom: PrometheusProcess,
    settings: Any,
    monkeypatch: Any,
    scrapes: int,
    families: list[str],
    dialect: str = "auto",
) -> list[Any]:
    """Ingest the backfilled scrapes (EPOCH, last scrape] with "now" pinned an hour after EPOCH."""
    from ingest import services
    from ingest.prometheus import PrometheusClient

    settings.INGEST_STEP_SECONDS = STEP
    settings.INGEST_IB_DIALECT = dialect
    monkeypatch.setattr(services, "utcnow", lambda: at(EPOCH + 3600))
    outcomes = services.ingest_all(
        since=at(EPOCH),
        until=at(EPOCH + (scrapes - 1) * STEP),
        client=PrometheusClient(prom.url),
        families=families,
    )
    assert [o.status for o in outcomes] == ["ok"] * len(families), [o.error for o in outcomes]
    return outcomes


@contextmanager
def backfilled(workdir: Path, *exports: list[str]) -> Iterator[PrometheusProcess]:
    """A Prometheus (no scrape targets) holding the given OpenMetrics exports as blocks."""
    require_prometheus()
    om, tsdb = workdir / "history.om", workdir / "tsdb"
    by_name: dict[str, list[str]] = {}
    for export in exports:
        for line in export:
            by_name.setdefault(line.split("{", 1)[0], []).append(line)
    om.write_text(
        "\n".join(line for name in sorted(by_name) for line in by_name[name]) + "\n# EOF\n"
    )
    create_blocks(om, tsdb)
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 30s\nscrape_configs: []\n")
    process = PrometheusProcess(config, tsdb).start()
    try:
        yield process
    finally:
        process.stop()
