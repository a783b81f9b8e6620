"""evaluate_alerts, backtest_rule and the ingest hook."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from alerts import hooks
from alerts.models import Alert
from tests.alerts import seed
from tests.support.clock import pinned

pytestmark = pytest.mark.django_db
NOW = float(int(time.time() // 30) * 30)


@pytest.fixture(autouse=True)
def _evaluations_now() -> Iterator[None]:
    """Evaluations read ``core.clock``: pinned at NOW, however long after import a test runs
    (NOW is taken at import; the wall clock would make the seeded cursors look stale)."""
    with pinned(datetime.fromtimestamp(NOW, UTC)):
        yield


def test_evaluate_alerts_command_evaluates_once() -> None:
    seed.xid(seed.nodes(["gpu-001"], ports=0)["gpu-001"], 4, NOW - 60, 94)
    seed.cover(NOW)
    out = StringIO()
    call_command("evaluate_alerts", stdout=out)
    assert out.getvalue().startswith("1 change(s); firing 1, pending 0, silenced 0, inhibited 0")
    assert Alert.objects.get().rule == "gpu_xid"


def test_backtest_rule_replays_with_overrides_and_changes_nothing() -> None:
    node = seed.nodes(["gpu-001"], ports=0)["gpu-001"]
    seed.xid(node, 1, NOW - 5 * 3600, 48)
    seed.xid(node, 1, NOW - 3600 * 2, 13)
    seed.cover(NOW)
    out = StringIO()
    call_command("backtest_rule", "gpu_xid", "--since", "1d", stdout=out)
    lines = out.getvalue().splitlines()
    assert "2 alert(s) would have fired" in lines[0]
    assert "gpu=1 node=gpu-001  XID 48 (hardware) on gpu-001 GPU 1: xid 48" in lines[1]
    out = StringIO()
    call_command(
        "backtest_rule", "gpu_xid", "--since", "1d", "--set", "application_codes=[]", stdout=out
    )
    assert "1 alert(s) would have fired" in out.getvalue()
    assert Alert.objects.count() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gpu_drift"], "unknown rule 'gpu_drift'"),
        (["gpu_xid", "--since", "soon"], "since: expected a duration"),
        (["gpu_xid", "--set", "window_seconds=long"], "params.window_seconds: expected an integer"),
        (["gpu_xid", "--set", "colour=red"], "params.colour: unknown parameter of gpu_xid"),
    ],
)
def test_backtest_rule_refuses_bad_input_clearly(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("backtest_rule", *args, stdout=StringIO())


def test_ingest_hook_queues_one_evaluation_per_burst(monkeypatch, settings) -> None:
    queued = []
    monkeypatch.setattr("alerts.tasks.evaluate_alerts.apply_async", lambda **kw: queued.append(kw))
    from django.core.cache import cache

    from alerts.tasks import QUEUED_KEY

    cache.delete(QUEUED_KEY)
    event = {
        "type": "ingest.committed",
        "families": ["gpu"],
        "covered_until": "2026-01-01T00:00:00+00:00",
        "rows": 8,
    }
    assert hooks.on_ingest_committed(event) is True
    assert hooks.on_ingest_committed(event) is False
    assert [q["kwargs"] for q in queued] == [{"trigger": "ingest"}]
    cache.delete(QUEUED_KEY)
    settings.ALERTS_EVALUATE_ON_INGEST = False
    assert hooks.on_ingest_committed(event) is False
