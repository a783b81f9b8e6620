"""Settings for pytest: the production settings read with test defaults in the environment.

pytest-django imports this module before any conftest.py runs. A variable
already in the environment wins. Each pytest run gets a database of its own
(pytest-django creates ``test_cw_<pid>``, ``…_gw<n>`` under pytest-xdist) and a Redis database
number of its own, so concurrent runs, xdist workers and a running demo never collide.
"""

from __future__ import annotations

import os

_PID = os.getpid()


def _redis_db() -> int:
    """1..15: this run's own; under pytest-xdist each worker of a run gets a different one."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return 1 + _PID % 15
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    # Workers are children of the run's controller: its pid spreads runs, the index spreads workers.
    return 1 + (os.getppid() * count + int(worker[2:])) % 15


TEST_ENVIRONMENT = {
    "DEBUG": "0",
    "SECRET_KEY": "test-secret-key-for-pytest-only-never-used-in-production-0123456789",
    "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/cw_{_PID}",
    "REDIS_URL": f"redis://127.0.0.1:6379/{_redis_db()}",
    # Nothing listens on port 1: tests that need Prometheus start their own.
    "PROMETHEUS_URL": "http://127.0.0.1:1",
    # No buildinfo probe before the first query: the fake backends of tests/scale count
    # requests exactly; tests/scale/test_victoria.py sets "auto" against real servers.
    "PROMETHEUS_FLAVOR": "prometheus",
    "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
    # No after-commit hooks by default: an evaluation queued by one test's ingest would
    # otherwise run on a test worker in the middle of another test. Tests that exercise
    # the hooks call them directly or set the setting.
    "INGEST_AFTER_COMMIT_HOOKS": "",
    # Factories change nodes, queues and health rows without an ingest commit, which is what
    # invalidates the cached overview; the cache's own test turns it on.
    "DASHBOARD_OVERVIEW_REFRESH_SECONDS": "0",
}
# xdist workers inherit the controller's environment, defaults included: the names set here
# as defaults (not given by the user) are recomputed in each worker (its own Redis database).
# tests/support/processes.subprocess_env drops the marker: a test's subprocess keeps its values.
DEFAULTED_MARKER = "CLUSTERWATCH_TEST_DEFAULTED"
_inherited = set(filter(None, os.environ.get(DEFAULTED_MARKER, "").split(",")))
for _name, _value in TEST_ENVIRONMENT.items():
    if _name in _inherited:
        os.environ[_name] = _value
    elif _name not in os.environ:
        os.environ[_name] = _value
        _inherited.add(_name)
os.environ[DEFAULTED_MARKER] = ",".join(sorted(_inherited))

from config import env  # noqa: E402
from config.settings import *  # noqa: E402,F403

# Seconds ingest sleeps after each committed chunk (ingest/services.py), so a fault test can
# kill a worker mid-cycle. Test-only: production settings do not define it. Subprocesses of
# tests read it with DJANGO_SETTINGS_MODULE=tests.settings (tests/support/processes.py: PAUSED).
INGEST_CHUNK_PAUSE_SECONDS = env.env_float("INGEST_CHUNK_PAUSE_SECONDS", 0.0, minimum=0.0)
