"""System checks: bad environment values stop start-up with a message naming the variable."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from config import env


@checks.register(checks.Tags.compatibility, deploy=False)
def check_environment(app_configs: Any = None, **_: Any) -> list[checks.CheckMessage]:
    """One error per bad environment variable."""
    return [
        checks.Error(f"Bad environment variable {problem}", id="clusterwatch.E001")
        for problem in env.ERRORS
    ]


def stop_on_configuration_errors() -> None:
    """For processes that do not run system checks (ASGI server, Celery): refuse to start."""
    if env.ERRORS:
        raise ImproperlyConfigured("Bad environment: " + "; ".join(env.ERRORS))
