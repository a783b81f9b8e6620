"""Prometheus-compatible backends: auth, tenant headers, CA bundle, path prefix, timeout, concurrency."""

from __future__ import annotations

import base64
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.test.utils import override_settings

from ingest.prometheus import PrometheusClient, PrometheusUnavailable
from tests.scale.fakeprom import fake_prometheus, self_signed

AT = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_bearer_token_reaches_the_backend() -> None:
    with fake_prometheus() as fake, override_settings(PROMETHEUS_BEARER_TOKEN="s3cret"):
        PrometheusClient(fake.url).query("up", AT)
    assert fake.requests[0].headers["Authorization"] == "Bearer s3cret"


def test_basic_auth_reaches_the_backend() -> None:
    with fake_prometheus() as fake, override_settings(PROMETHEUS_BASIC_AUTH="ops:pa:ss"):
        PrometheusClient(fake.url).query("up", AT)
    expected = base64.b64encode(b"ops:pa:ss").decode()
    assert fake.requests[0].headers["Authorization"] == f"Basic {expected}"


def test_extra_headers_name_the_mimir_tenant() -> None:
    headers = {"X-Scope-OrgID": "team-a|team-b"}
    with fake_prometheus() as fake, override_settings(PROMETHEUS_HEADERS=headers):
        PrometheusClient(fake.url).query_range("up", AT, AT, 30)
    assert fake.requests[0].headers["X-Scope-OrgID"] == "team-a|team-b"


def test_a_path_prefix_is_kept_for_every_api_call() -> None:
    with fake_prometheus(prefix="/prometheus") as fake:
        client = PrometheusClient(fake.url + "/")
        client.query("up", AT)
        client.query_range("up", AT, AT, 30)
        client.metric_names()
    assert [seen.path for seen in fake.requests] == [
        "/prometheus/api/v1/query",
        "/prometheus/api/v1/query_range",
        "/prometheus/api/v1/label/__name__/values",
    ]


def test_a_private_ca_bundle_verifies_the_backend(tmp_path: Path) -> None:
    ca, key = self_signed(tmp_path)
    with fake_prometheus(tls=(ca, key)) as fake:
        with pytest.raises(PrometheusUnavailable, match="SSL"):
            PrometheusClient(fake.url).query("up", AT)
        with override_settings(PROMETHEUS_CA_BUNDLE=str(ca)):
            answer = PrometheusClient(fake.url).query("up", AT)
    assert answer.series[0].labels == {"Hostname": "gpu-001"}


def test_a_slow_backend_times_out_as_an_outage() -> None:
    with fake_prometheus(delay=1.0) as fake, override_settings(PROMETHEUS_TIMEOUT_SECONDS=0.2):
        with pytest.raises(PrometheusUnavailable, match="(?i)timeout|timed out"):
            PrometheusClient(fake.url).query("up", AT)


@pytest.mark.parametrize("limit", [1, 3])
def test_queries_in_flight_never_exceed_the_concurrency_limit(limit: int) -> None:
    with fake_prometheus(delay=0.1) as fake, override_settings(PROMETHEUS_MAX_CONCURRENCY=limit):
        client = PrometheusClient(fake.url)
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda _: client.query("up", AT), range(12)))
    assert len(fake.requests) == 12
    assert fake.most_in_flight == limit


def test_no_limit_lets_every_query_run_at_once() -> None:
    with fake_prometheus(delay=0.2) as fake, override_settings(PROMETHEUS_MAX_CONCURRENCY=0):
        client = PrometheusClient(fake.url)
        with ThreadPoolExecutor(max_workers=6) as pool:
            list(pool.map(lambda _: client.query("up", AT), range(6)))
    assert fake.most_in_flight == 6
