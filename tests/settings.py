"""Settings for pytest: the production settings read with test defaults in the environment.

pytest-django imports this module before any conftest.py runs. A variable
already in the environment wins. Each pytest run gets a database of its own
(pytest-django creates ``test_cw_<pid>``) and a Redis database number of its
own, so concurrent runs and a running demo never collide.
"""

from __future__ import annotations

import os

_PID = os.getpid()
TEST_ENVIRONMENT = {
    "DEBUG": "0",
    "SECRET_KEY": "test-secret-key-for-pytest-only-never-used-in-production-0123456789",
    "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/cw_{_PID}",
    "REDIS_URL": f"redis://127.0.0.1:6379/{1 + _PID % 15}",
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
for _name, _value in TEST_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

from config import env  # noqa: E402
from config.settings import *  # noqa: E402,F403

# Seconds ingest sleeps after each committed chunk (ingest/services.py), so a fault test can
# kill a worker mid-cycle. Test-only: production settings do not define it. Subprocesses of
# tests read it with DJANGO_SETTINGS_MODULE=tests.settings (tests/support/processes.py: PAUSED).
INGEST_CHUNK_PAUSE_SECONDS = env.env_float("INGEST_CHUNK_PAUSE_SECONDS", 0.0, minimum=0.0)
