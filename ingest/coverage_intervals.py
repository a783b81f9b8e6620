"""Per-job scrape intervals for coverage, measured from the spacing of real samples.

For each family found, its first found metric: one ``group by (job, instance)``
to list the targets, then the raw samples of ONE target per job over the last
ten minutes (``metric{job=..., instance=...}[10m]``); the median spacing of
consecutive samples is the job's interval. Label values are untrusted text:
they are escaped as PromQL string literals. A warning is added only where the
interval degrades what ingest stores (docs/scaling.md "Scrape intervals").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from statistics import median

from django.conf import settings

from .prometheus import PrometheusClient, PrometheusError

WINDOW_SECONDS = 600
#: Prometheus' default lookback (--query.lookback-delta): a range query sees nothing
#: between samples further apart than this.
LOOKBACK_SECONDS = 300


@dataclass(frozen=True)
class JobInterval:
    """A job's detected scrape interval (seconds; None when too few samples to tell)."""

    job: str
    metric: str
    seconds: float | None


def promql_string(value: str) -> str:
    """``value`` as a double-quoted PromQL string literal (escapes \\, ", newlines)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped.replace("\r", "\\r").replace("\t", "\\t") + '"'


def spacing(stamps: Iterable[float]) -> float | None:
    """The median gap between consecutive distinct sample times, to the millisecond."""
    ordered = sorted(set(stamps))
    gaps = [b - a for a, b in zip(ordered, ordered[1:], strict=False)]
    return round(median(gaps), 3) if gaps else None


def job_intervals(client: PrometheusClient, metric: str, at: datetime | None) -> list[JobInterval]:
    """The scrape interval of every job exporting ``metric`` (one target sampled per job)."""
    targets = client.query(f"group by (job, instance) ({metric})", at).series
    first: dict[str, str] = {}
    for series in sorted(
        targets, key=lambda s: (s.labels.get("job", ""), s.labels.get("instance", ""))
    ):
        first.setdefault(series.labels.get("job", ""), series.labels.get("instance", ""))
    found = []
    for job, instance in sorted(first.items()):
        selector = f"{metric}{{job={promql_string(job)}, instance={promql_string(instance)}}}"
        try:
            answer = client.query(f"{selector}[{WINDOW_SECONDS}s]", at)
        except PrometheusError:
            found.append(JobInterval(job, metric, None))
            continue
        per_series = [spacing(ts for ts, _ in s.points) for s in answer.series]
        known = [gap for gap in per_series if gap is not None]
        found.append(JobInterval(job, metric, median(known) if known else None))
    return found


def warnings(interval: JobInterval) -> list[str]:
    """What the interval degrades, if anything (nothing for an interval within the limits)."""
    if interval.seconds is None:
        return []
    longest = settings.INGEST_MAX_SCRAPE_INTERVAL_SECONDS
    if interval.seconds > LOOKBACK_SECONDS:
        return [
            f"{interval.job} is scraped every {interval.seconds:g} s, more than the backend's "
            f"{LOOKBACK_SECONDS} s lookback: range queries see nothing between its samples, "
            "so most steps are gaps. Scrape it at least every 120 s."
        ]
    if interval.seconds > longest:
        return [
            f"{interval.job} is scraped every {interval.seconds:g} s, more than "
            f"INGEST_MAX_SCRAPE_INTERVAL_SECONDS={longest}: a step more than {longest} s after "
            f"its sample is stored as a gap. Raise INGEST_MAX_SCRAPE_INTERVAL_SECONDS to "
            f"{int(interval.seconds)} or scrape it more often."
        ]
    return []  # slower than the step is fine: the step between samples carries the rate
