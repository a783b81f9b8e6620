"""Backend flavour detection and the answer checks every backend gets (no server needed).

The answers are the ones the real servers give: Prometheus 2.42's buildinfo, and
VictoriaMetrics 1.79.5's (``{}``, app/vmselect/main.go) and later versions' fixed
``{"version": "2.24.0"}``; /flags lines as lib/flagutil/flag.go writes them.
tests/scale/test_victoria.py runs the detection against both real servers.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.test.utils import override_settings

from ingest.flavor import flavor_of, min_staleness_seconds, warn_if_short_lookback
from ingest.prometheus import (
    PrometheusClient,
    PrometheusError,
    PrometheusUnavailable,
    _checked_result,
)

PROMETHEUS_BUILDINFO = {
    "version": "2.42.0+ds",
    "revision": "2.42.0+ds-5+deb12u1",
    "branch": "debian/sid",
    "goVersion": "go1.19.8",
}
NOCACHE = {"nocache": "1"}
RESULT = [{"metric": {}, "values": [[1, "1"]]}]


@pytest.mark.parametrize(
    ("buildinfo", "flavor"),
    [
        (PROMETHEUS_BUILDINFO, "prometheus"),
        ({}, "victoriametrics"),
        ({"version": "2.24.0"}, "victoriametrics"),
        (None, "prometheus"),  # no buildinfo (404): Prometheus' API as the default
        (["not", "an", "object"], "prometheus"),
    ],
)
def test_the_flavor_comes_from_buildinfo(buildinfo: object, flavor: str) -> None:
    assert flavor_of(buildinfo) == flavor


@pytest.mark.parametrize(
    ("flags", "seconds"),
    [
        ('-httpListenAddr="127.0.0.1:8428"\n-search.minStalenessInterval="5m1s"\n', 301.0),
        ('-search.minStalenessInterval="1h0m0s"\n', 3600.0),
        ('-search.minStalenessInterval="1.5s"\n', 1.5),
        ('-search.maxStalenessInterval="5m0s"\n', 0.0),
        ("", 0.0),
    ],
)
def test_min_staleness_is_read_from_the_flags_page(flags: str, seconds: float) -> None:
    assert min_staleness_seconds(flags) == seconds


def test_a_short_lookback_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ingest.flavor"):
        warn_if_short_lookback("http://vm", '-search.minStalenessInterval="5m1s"\n')
        assert caplog.messages == []
        warn_if_short_lookback("http://vm", '-retentionPeriod="100y"\n')
    assert len(caplog.messages) == 1
    assert "-search.minStalenessInterval=0s" in caplog.messages[0]


def test_a_success_answer_gives_its_result() -> None:
    body = {"status": "success", "data": {"resultType": "matrix", "result": RESULT}}
    assert _checked_result(body, "http://b") == RESULT
    assert _checked_result({**body, "isPartial": False}, "http://b") == RESULT


def test_an_error_status_raises_with_its_type_and_message() -> None:
    body = {"status": "error", "errorType": "422", "error": "cannot parse query"}
    with pytest.raises(PrometheusError, match="422: cannot parse query"):
        _checked_result(body, "http://b")


def test_a_partial_answer_is_an_outage_not_data() -> None:
    body = {"status": "success", "isPartial": True, "data": {"result": RESULT}}
    with pytest.raises(PrometheusUnavailable, match="partial"):
        _checked_result(body, "http://b")


@pytest.mark.parametrize(("flavor", "extra"), [("prometheus", {}), ("victoriametrics", NOCACHE)])
def test_victoriametrics_queries_carry_nocache(flavor: str, extra: dict[str, str]) -> None:
    start = datetime(2026, 6, 1, 11, 0, tzinfo=UTC)
    with override_settings(PROMETHEUS_FLAVOR=flavor):
        client = PrometheusClient("http://127.0.0.1:1")
        forms = client._range_forms("up", start, start + timedelta(minutes=10), 30)
    assert forms == [{"query": "up", "start": 1780311600, "end": 1780312200, "step": "30", **extra}]
