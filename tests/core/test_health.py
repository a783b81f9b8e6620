"""/healthz says the process is alive; /readyz checks every dependency, both without login."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client
from pytest_django import Settings

from tests.support.processes import Prometheus, free_port, run_prometheus

pytestmark = pytest.mark.django_db


@pytest.fixture
def empty_prometheus(tmp_path: Path) -> Iterator[Prometheus]:
    """A real Prometheus with no scrape targets, stopped after the test."""
    with run_prometheus(workdir=tmp_path) as prometheus:
        yield prometheus


def _components(response: object) -> dict[str, dict[str, object]]:
    return {component["name"]: component for component in response.json()["components"]}


def test_healthz_answers_without_login(client: Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_503_when_prometheus_is_unreachable(client: Client, settings: Settings) -> None:
    settings.PROMETHEUS_URL = f"http://127.0.0.1:{free_port()}"

    response = client.get("/readyz")

    components = _components(response)
    assert response.status_code == 503
    assert response.json()["status"] == "not ready"
    assert components["prometheus"]["ok"] is False
    assert components["prometheus"]["detail"].startswith("ConnectionError: ")
    assert components["postgres"]["ok"] is True
    assert components["redis"]["ok"] is True


def test_readyz_only_runs_the_checks_named(client: Client, settings: Settings) -> None:
    settings.PROMETHEUS_URL = f"http://127.0.0.1:{free_port()}"

    response = client.get("/readyz", {"only": "postgres,redis"})

    assert response.status_code == 200
    assert sorted(_components(response)) == ["postgres", "redis"]
    bad = client.get("/readyz", {"only": "postgres,nope"})
    assert (bad.status_code, bad.json()["error"]) == (400, "bad_parameter")
    assert (
        "unknown check 'nope' (known: ingest_lag, postgres, prometheus, redis)"
        in bad.json()["detail"]
    )


def test_readyz_is_503_when_redis_is_unreachable(client: Client, settings: Settings) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = client.get("/readyz")

    components = _components(response)
    assert response.status_code == 503
    assert components["redis"]["ok"] is False
    assert components["redis"]["detail"].startswith("ConnectionError: ")


def test_readyz_is_200_when_every_component_is_up(
    client: Client, settings: Settings, empty_prometheus: Prometheus
) -> None:
    settings.PROMETHEUS_URL = empty_prometheus.url

    response = client.get("/readyz")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "ready"
    components = _components(response)
    assert {"postgres", "redis", "prometheus"} <= components.keys()
    assert all(component["ok"] for component in components.values())
