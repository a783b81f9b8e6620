"""Test-wide set-up: users and tokens, static files, real processes.

The test environment (own database and Redis db per run) is set by
``tests/settings.py``, which pytest-django loads before any conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections
from django.test import Client, TransactionTestCase
from django.test.utils import override_settings

from tests.support.clock import FIXED_EPOCHS, forget_cached, pinned
from tests.support.processes import (
    AsgiServer,
    CeleryWorker,
    run_asgi_server,
    run_celery_worker,
    subprocess_env,
)
from tests.support.timeseries import (
    delete_committed_rows,
    remember_seeded_rows,
    truncate_timeseries,
    uses_transactional_db,
)

PASSWORD = "correct horse battery staple"


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to run on a bad environment (tests/settings.py reads it)."""
    from config import env

    if env.ERRORS:
        raise pytest.UsageError("bad environment for the tests: " + "; ".join(env.ERRORS))


from tests.support.fixtures import *  # noqa: E402,F403 - Prometheus and simulator fixtures

#: The modules that took longest under ``make test`` (``--durations``, 2026-12-01), longest
#: first. The Makefile runs two xdist workers with ``--dist loadfile --no-loadscope-reorder``:
#: a worker takes the next whole module in this order, so starting with these lets both
#: workers finish together. A module not listed keeps its place after them.
SLOW_FIRST = (
    "tests/scale/test_workers.py",
    "tests/conformance/test_scenarios.py",
    "tests/browser/test_live_idle.py",
    "tests/dashboard/test_simulated.py",
    "tests/alerts/test_acceptance.py",
    "tests/conformance/test_hardware_scenarios.py",
    "tests/browser/test_polish.py",
    "tests/conformance/test_live_gap.py",
    "tests/conformance/test_scrape_intervals.py",
    "tests/deploy/test_entrypoint.py",
    "tests/conformance/test_node_identity.py",
    "tests/ingest/test_runs_integration.py",
    "tests/alerts/test_notify_worker.py",
    "tests/simulator/test_prometheus_scenarios.py",
    "tests/core/test_secrets.py",
    "tests/browser/test_hostile_labels.py",
    "tests/ingest/test_remote_read.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The SLOW_FIRST modules first (a stable sort: the order within and after them is kept)."""
    rank = {module: index for index, module in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture(scope="session", autouse=True)
def collected_static(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """collectstatic into a temporary STATIC_ROOT, as in production (manifest, compressed).

    Pages render through the manifest storage, so a template naming a static file
    that does not exist fails here as it would in production.
    """
    root = tmp_path_factory.mktemp("staticfiles")
    with override_settings(STATIC_ROOT=root):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield root


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """pytest-django's test database, and what its migrations seeded remembered (for teardown)."""
    with django_db_blocker.unblock():
        for alias in connections:
            remember_seeded_rows(connections[alias])


def _delete_instead_of_flush(self: TransactionTestCase) -> None:
    """TransactionTestCase's teardown without TRUNCATE and post_migrate (tests/support/timeseries.py)."""
    for alias in self._databases_names(include_mirrors=False):
        delete_committed_rows(connections[alias])


TransactionTestCase._fixture_teardown = _delete_instead_of_flush  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _empty_timeseries_after_committing_tests(
    request: pytest.FixtureRequest, django_db_blocker: Any
) -> Iterator[None]:
    """Transactional tests commit time-series rows that Django's flush would leave behind."""
    yield
    marker = request.node.get_closest_marker("django_db")
    if uses_transactional_db(list(request.fixturenames), marker.kwargs if marker else {}):
        with django_db_blocker.unblock():
            truncate_timeseries()


@pytest.fixture(params=list(FIXED_EPOCHS.values()), ids=[f"epoch-{hhmm}" for hhmm in FIXED_EPOCHS])
def fixed_epoch(request: pytest.FixtureRequest) -> Iterator[datetime]:
    """``core.clock.now()`` pinned at each of four instants in turn (tests/support/clock.py).

    A test that asks for it runs once per epoch; fixtures that build data "ending now"
    (tests/dashboard's ``cluster``) read the same pinned clock.
    """
    forget_cached()
    with pinned(request.param) as moment:
        yield moment
    forget_cached()


@pytest.fixture
def password() -> str:
    """The password of ``user`` and ``staff_user``."""
    return PASSWORD


@pytest.fixture
def user(django_user_model: type) -> object:
    """An ordinary active user, password ``PASSWORD``."""
    return django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)


@pytest.fixture
def staff_user(django_user_model: type) -> object:
    """A superuser with access to the admin, password ``PASSWORD``."""
    return django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)


@pytest.fixture
def api_token(user: object) -> str:
    """A fresh read token of ``user``: the raw value, as ``create_api_token`` prints it."""
    from core.models import APIToken

    _, raw = APIToken.issue(user, name="pytest")
    return raw


@pytest.fixture
def logged_in_client(client: Client, user: object) -> Client:
    """The test client with ``user``'s session."""
    client.force_login(user)
    return client


@pytest.fixture(scope="module")
def celery_worker(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorker]:
    """A real Celery worker on the test database and test Redis, for one test module.

    Tests that use it need ``@pytest.mark.django_db(transaction=True)``: what they
    write must be committed for the worker to see it, and the worker's writes are
    then flushed after the test.
    """
    log_dir = tmp_path_factory.mktemp("celery-worker")
    with run_celery_worker(subprocess_env(), log_dir=log_dir) as worker:
        yield worker


@pytest.fixture(scope="session")
def asgi_server(
    django_db_setup: None, collected_static: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AsgiServer]:
    """daphne serving the real ASGI app (HTTP + websockets) on the test database and Redis.

    As with ``celery_worker``, tests need ``@pytest.mark.django_db(transaction=True)``.
    """
    log_dir = tmp_path_factory.mktemp("daphne")
    with run_asgi_server(subprocess_env(), log_dir=log_dir) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_sampling_context_from_an_earlier_test() -> None:
    """Each test's ingest reads its own sampling context (``ingest.sources.base.fetch_sampling``
    keeps one per query and process; tests reuse epochs and, by chance, ports)."""
    from ingest.sources.base import forget_sampling

    forget_sampling()
