"""Shared set-up of the end-to-end alert tests: ingest the scenario cluster's history once, then replay.

The session's ``scenario_prometheus`` holds 2 h of simulator history with one
fault of each kind (tests/support/fixtures.py). ``ingested`` pulls all of it
through real ingest into the test database (committed, module-scoped) and
empties ingest's tables afterwards; ``replay`` moves the ingest cursors forward
one step at a time and evaluates, as the live hook would after each cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from django.apps import apps
from django.db import connection

from alerts.models import Alert
from alerts.services import evaluate
from ingest import gpu_steps, ib_encoded
from ingest.models import GpuHotSample, IbHotSample
from tests.alerts import seed


@dataclass
class Seen:
    """When (replay time) an alert was first seen firing, and when it resolved."""

    alert: Alert
    first_firing: float | None = None
    resolved: float | None = None


@dataclass
class Replay:
    """The alerts a replay produced, by fingerprint."""

    seen: dict[str, Seen] = field(default_factory=dict)

    def of(self, rule: str, **labels: str) -> list[Seen]:
        """Alerts of ``rule`` whose labels include ``labels`` (that ever fired)."""
        return [
            s for s in self.seen.values()
            if s.alert.rule == rule and s.first_firing is not None
            and all(s.alert.labels.get(k) == v for k, v in labels.items())
        ]  # fmt: skip


def ingest_history(prom: object) -> None:
    """Every family over the whole history, through ingest's own services."""
    from ingest.prometheus import PrometheusClient
    from ingest.services import ingest_all

    client = PrometheusClient(prom.prometheus.url, timeout=120)  # type: ignore[attr-defined]
    since = datetime.fromtimestamp(prom.start, UTC)  # type: ignore[attr-defined]
    until = datetime.fromtimestamp(prom.end - 30, UTC)  # type: ignore[attr-defined]
    ingest_all(since=since, until=until, client=client)


def empty_ingest_tables() -> None:
    """Remove everything ingest wrote (dimension and time-series tables)."""
    tables = [
        m._meta.db_table
        for m in apps.get_app_config("ingest").get_models()
        if not m._meta.proxy and m not in (GpuHotSample, IbHotSample)  # views of these and:
    ] + [gpu_steps.TABLE, ib_encoded.TABLE]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} CASCADE")


@pytest.fixture(scope="module")
def ingested(
    django_db_setup: None, django_db_blocker: pytest.FixtureRequest, scenario_prometheus
) -> Iterator[object]:
    """The scenario history, ingested and committed for this module's tests."""
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        ingest_history(scenario_prometheus)
        try:
            yield scenario_prometheus
        finally:
            empty_ingest_tables()


def replay(start: float, end: float, step: float = 60.0) -> Replay:
    """Evaluate at each step from start to end with the cursors there, recording what fired when."""
    result = Replay()
    t = start
    while t <= end:
        seed.cover(t, families=("gpu", "ib", "kueue", "runs", "checkpoints", "cluster", "topology"))
        evaluate(trigger="replay", now=t)
        for alert in Alert.objects.exclude(state="inactive"):
            seen = result.seen.setdefault(alert.fingerprint + str(alert.pk), Seen(alert))
            seen.alert = alert
            if alert.state == "firing" and seen.first_firing is None:
                seen.first_firing = t
            if alert.state == "resolved" and seen.resolved is None:
                seen.resolved = t
        t += step
    return result
