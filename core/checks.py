"""System checks: bad environment values stop start-up with a message naming the variable."""

from __future__ import annotations

import logging
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from config import env

log = logging.getLogger(__name__)


@checks.register(checks.Tags.compatibility, deploy=False)
def check_environment(app_configs: Any = None, **_: Any) -> list[checks.CheckMessage]:
    """One error per bad environment variable."""
    return [
        checks.Error(f"Bad environment variable {problem}", id="clusterwatch.E001")
        for problem in env.ERRORS
    ]


@checks.register(checks.Tags.security, deploy=False)
def check_environment_warnings(app_configs: Any = None, **_: Any) -> list[checks.CheckMessage]:
    """One warning per unwise environment value (e.g. credentials in PROMETHEUS_URL)."""
    return [checks.Warning(problem, id="clusterwatch.W001") for problem in env.WARNINGS]


def stop_on_configuration_errors() -> None:
    """For processes that do not run system checks (ASGI server, Celery): refuse to start.

    Warnings do not stop the process; they are logged once here.
    """
    for problem in env.WARNINGS:
        log.warning("configuration: %s", problem)
    if env.ERRORS:
        raise ImproperlyConfigured("Bad environment: " + "; ".join(env.ERRORS))
