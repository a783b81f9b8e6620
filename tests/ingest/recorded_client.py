"""A PrometheusClient stand-in answering range queries from recorded JSON (parser edge cases only).

The file maps a metric name to the ``data.result`` list Prometheus returned; a
query gets the answer of the first recorded metric name it mentions, decoded by
the real ``ingest.prometheus.decode`` (so NaN / ±Inf / missing labels behave as live).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from ingest.prometheus import Answer, decode
from ingest.sources.base import Window

DATA = Path(__file__).parent / "data"
T0 = 1_700_000_010  # a multiple of 30
NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


class RecordedClient:
    """Answers ``query_range`` from tests/ingest/data/<file>; records the queries asked."""

    url = "http://recorded"

    def __init__(self, filename: str) -> None:
        self.results: dict[str, list[dict]] = json.loads((DATA / filename).read_text())
        self.queries: list[str] = []

    def query_range(
        self, promql: str, start: datetime, end: datetime, step_seconds: float
    ) -> Answer:
        self.queries.append(promql)
        for name in NAME.findall(promql):
            if name in self.results:
                return decode(_shift(self.results[name]))
        return Answer()


def _shift(result: list[dict]) -> list[dict]:
    """Recorded times are offsets from T0 (so files stay readable): make them absolute."""
    return [
        {**item, "values": [[T0 + ts, value] for ts, value in item["values"]]} for item in result
    ]


def window(steps: int = 3, step: int = 30) -> Window:
    """The window (T0, T0 + steps*step] — T0 itself is the baseline point."""
    start = datetime.fromtimestamp(T0, UTC)
    return Window(start, datetime.fromtimestamp(T0 + steps * step, UTC), step)
