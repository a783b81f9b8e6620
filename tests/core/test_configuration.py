"""Configuration comes from the environment; a bad value stops ``manage.py check`` naming the variable."""

from __future__ import annotations

import io
import secrets
import string
import subprocess
import sys

import pytest
from django.core.management import call_command

from tests.support.processes import BASE_DIR, subprocess_env

pytestmark = pytest.mark.django_db

BAD_VALUES = {
    "DEBUG": ("maybe", "expected one of true/false, 1/0, yes/no, on/off"),
    "DATABASE_URL": ("mysql://x", "expected a URL like postgres://host:port/..."),
    "REDIS_URL": ("nonsense", "expected a URL like redis://host:port/..."),
    "TIME_ZONE": (
        "Mars/Base",
        "unknown time zone (expected an IANA name such as UTC or Europe/Paris)",
    ),
    "PROMETHEUS_URL": ("prometheus:9090", "expected a URL like http://host:port/..."),
    "INGEST_INTERVAL_SECONDS": ("often", "expected an integer"),
    "ALERTS_NAMESPACE_TEAMS": ("Team_A=ml", "'Team_A' is not a Kubernetes namespace name"),
    "INGEST_PUSH_URL": ("b:9201", "expected a URL like http://host:port/..."),
    "WORKER_GC_THRESHOLDS": ("1000,x", "expected 3 integers >= 1, e.g. 100000,50,100"),
}


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(
        command, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )


def test_bad_environment_values_fail_check_naming_each_variable() -> None:
    env = subprocess_env(**{variable: value for variable, (value, _) in BAD_VALUES.items()})

    finished = _manage("check", env=env)

    assert finished.returncode == 1
    for variable, (value, problem) in BAD_VALUES.items():
        message = f"(clusterwatch.E001) Bad environment variable {variable}={value!r}: {problem}"
        assert message in finished.stderr


def test_missing_secret_key_fails_check_when_debug_is_off() -> None:
    env = subprocess_env(DEBUG="0")
    del env["SECRET_KEY"]

    finished = _manage("check", env=env)

    assert finished.returncode == 1
    assert (
        "Bad environment variable SECRET_KEY: not set (required when DEBUG is off)"
        in finished.stderr
    )


def test_check_passes_with_the_test_environment() -> None:
    out = io.StringIO()

    call_command("check", stdout=out)

    assert out.getvalue() == "System check identified no issues (0 silenced).\n"


def test_check_deploy_is_clean_with_production_like_environment() -> None:
    alphabet = string.ascii_letters + string.digits + "!@#%^&*(-_=+)"
    secret_key = "".join(secrets.choice(alphabet) for _ in range(50))
    env = subprocess_env(DEBUG="0", SECRET_KEY=secret_key, ALLOWED_HOSTS="example.com")

    finished = _manage("check", "--deploy", env=env)

    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.startswith("System check identified no issues")
    assert "WARNINGS" not in finished.stderr
