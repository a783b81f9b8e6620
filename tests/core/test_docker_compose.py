"""docker-compose.yml, checked without a docker engine.

It parses; it has every service of the stack; the Python services share one image built
from the Dockerfile; every command parses with the real command-line parser of the code it
names; the environment it sets is what the settings read and passes ``manage.py check``;
health checks and volumes are in place.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import get_commands, load_command_class
from django.urls import resolve
from django.utils.module_loading import import_string

from core.management.commands.ensure_demo_user import PASSWORD_VARIABLE
from tests.support.processes import BASE_DIR

COMPOSE_FILE = BASE_DIR / "docker-compose.yml"
STACK = {"postgres", "redis", "prometheus", "web", "worker", "beat", "simulator"}
APP_IMAGE = "clusterwatch:local"
REQUIRED_SETTINGS = {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_URL", "SECRET_KEY", "ALLOWED_HOSTS"}
_INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")

Compose = dict[str, Any]


def _interpolate(value: str) -> str:
    """Compose's ``${NAME:-default}`` with nothing set: the default; ``$$`` is a literal ``$``."""
    return _INTERPOLATION.sub(lambda match: match["default"] or "", value).replace("$$", "$")


@pytest.fixture(scope="module")
def compose() -> Compose:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def app_services(compose: Compose) -> dict[str, dict[str, Any]]:
    """The services that run the app's image."""
    return {name: s for name, s in compose["services"].items() if s.get("image") == APP_IMAGE}


def _command(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    assert isinstance(command, list), "commands are lists, so no shell re-splits them"
    return [_interpolate(str(arg)) for arg in command]


def _settings_read_from_environment() -> set[str]:
    source = (BASE_DIR / "config" / "settings.py").read_text()
    return set(re.findall(r"env\.env_\w+\(\s*\"([A-Z][A-Z0-9_]*)\"", source))


def test_compose_file_has_every_service_of_the_stack(compose: Compose) -> None:
    assert STACK <= compose["services"].keys()


def test_python_services_share_one_image_built_from_the_dockerfile(
    compose: Compose, app_services: dict[str, dict[str, Any]]
) -> None:
    assert {"web", "worker", "beat", "simulator", "migrate"} <= app_services.keys()
    builds = {name: s.get("build") for name, s in compose["services"].items() if "build" in s}
    assert builds.keys() == app_services.keys()
    assert all(build == {"context": ".", "dockerfile": "Dockerfile"} for build in builds.values())


def test_dockerfile_installs_the_lock_collects_static_and_drops_root() -> None:
    lines = [line.strip() for line in (BASE_DIR / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]

    assert instructions[0] == "FROM python:3.11-slim"
    assert "RUN pip install -r requirements.lock" in instructions
    assert any("manage.py collectstatic --noinput" in line for line in instructions)
    users = [line.split()[1] for line in instructions if line.startswith("USER ")]
    assert users and users[-1] not in {"root", "0"}
    assert (BASE_DIR / "requirements.lock").is_file()


def _check_manage_py(argv: list[str]) -> None:
    assert argv[:2] == ["python", "manage.py"], argv
    name, args = argv[2], argv[3:]
    assert name in get_commands(), f"no manage.py command {name!r}"
    parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
    parser.parse_args(args)  # raises CommandError on an unknown or bad argument


def _check_web_server(argv: list[str]) -> None:
    from config import serve

    assert argv[:3] == ["python", "-m", "config.serve"], argv
    options = serve.parser().parse_args(argv[3:])  # exits on an unknown option
    assert (options.host, options.port) == ("0.0.0.0", 8000)
    command = serve.argv(options.host, options.port, 2)
    assert command[1:4] == ["-m", "uvicorn", "config.asgi:application"]
    import_string("uvicorn.main")
    import_string("config.asgi.application")


def _check_python(argv: list[str]) -> None:
    (_check_web_server if argv[1] == "-m" else _check_manage_py)(argv)


def _check_celery(argv: list[str]) -> None:
    from celery.bin.base import CLIContext
    from celery.bin.celery import celery as celery_cli

    assert argv[:3] == ["celery", "-A", "config"], argv
    app = import_string("config.celery_app")
    assert type(app).__name__ == "Celery"
    subcommand = celery_cli.commands[argv[3]]
    context = CLIContext(app=app, no_color=True, workdir=None, quiet=True)
    subcommand.make_context(argv[3], argv[4:], obj=context)  # raises on an unknown option


CHECKERS: dict[str, Callable[[list[str]], None]] = {
    "python": _check_python,
    "celery": _check_celery,
}


@pytest.mark.parametrize("service", ["migrate", "demo-user", "web", "worker", "beat", "simulator"])
def test_service_command_points_at_code_that_exists(compose: Compose, service: str) -> None:
    argv = _command(compose["services"][service])

    CHECKERS[argv[0]](argv)


def test_expected_commands_run_in_each_service(compose: Compose) -> None:
    services = compose["services"]

    assert _command(services["web"])[:3] == ["python", "-m", "config.serve"]
    assert _command(services["worker"])[:4] == ["celery", "-A", "config", "worker"]
    assert _command(services["beat"])[:4] == ["celery", "-A", "config", "beat"]
    assert _command(services["migrate"])[:4] == ["python", "manage.py", "migrate", "--noinput"]
    simulator = _command(services["simulator"])
    assert simulator[:4] == ["python", "manage.py", "simulate", "serve"]
    assert simulator[4:10] == ["--nodes", "64", "--scenario", "demo", "--host", "0.0.0.0"]


def test_app_services_set_only_environment_the_settings_read(
    app_services: dict[str, dict[str, Any]],
) -> None:
    read = _settings_read_from_environment()
    # Read by the service's own command, not by the settings.
    own = {"demo-user": {PASSWORD_VARIABLE}}

    assert REQUIRED_SETTINGS <= read
    for name, service in app_services.items():
        environment = service["environment"]
        assert isinstance(environment, dict), name
        allowed = read | own.get(name, set())
        assert environment.keys() <= allowed, f"{name} sets {sorted(environment.keys() - allowed)}"
        assert REQUIRED_SETTINGS <= environment.keys(), name


def test_app_service_environment_passes_manage_py_check(
    app_services: dict[str, dict[str, Any]],
) -> None:
    environment = {
        key: _interpolate(str(v)) for key, v in app_services["web"]["environment"].items()
    }
    env = {"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **environment}

    finished = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 0, finished.stderr


def test_services_start_in_dependency_order(compose: Compose) -> None:
    services = compose["services"]

    assert services["web"]["depends_on"]["migrate"] == {
        "condition": "service_completed_successfully"
    }
    assert services["migrate"]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert services["worker"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert services["beat"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert services["prometheus"]["depends_on"]["simulator"] == {"condition": "service_started"}


@pytest.mark.parametrize(
    "service", ["postgres", "redis", "prometheus", "web", "worker", "simulator"]
)
def test_long_running_services_have_health_checks(compose: Compose, service: str) -> None:
    test = compose["services"][service]["healthcheck"]["test"]

    assert test[0] in {"CMD", "CMD-SHELL"} and len(test) > 1


def test_web_health_check_probes_healthz(compose: Compose) -> None:
    test = compose["services"]["web"]["healthcheck"]["test"]

    code = test[-1]
    compile(code, "<healthcheck>", "exec")
    assert "http://127.0.0.1:8000/healthz" in code
    assert resolve("/healthz").url_name == "healthz"


def _named_volumes(service: dict[str, Any]) -> dict[str, str]:
    """Named volume -> mount path (bind mounts, which start with . or /, excluded)."""
    mounts = [str(volume).split(":") for volume in service.get("volumes", [])]
    return {m[0]: m[1] for m in mounts if not m[0].startswith((".", "/"))}


def test_state_lives_in_named_volumes(compose: Compose) -> None:
    services, declared = compose["services"], set(compose["volumes"])

    assert _named_volumes(services["postgres"]).get("postgres-data") == "/var/lib/postgresql/data"
    assert _named_volumes(services["redis"]).get("redis-data") == "/data"
    assert _named_volumes(services["prometheus"]).get("prometheus-data") == "/prometheus"
    used = {volume for service in services.values() for volume in _named_volumes(service)}
    assert used == declared


def test_bind_mounts_exist_in_the_repository(compose: Compose) -> None:
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if source.startswith("."):
                assert (BASE_DIR / source).exists(), source


def test_prometheus_reads_the_targets_the_simulator_writes(compose: Compose) -> None:
    services = compose["services"]
    simulator = _command(services["simulator"])
    targets_file = Path(simulator[simulator.index("--write-file-sd") + 1])
    config = yaml.safe_load((BASE_DIR / "deploy" / "prometheus" / "prometheus.yml").read_text())
    [pattern] = config["scrape_configs"][0]["file_sd_configs"][0]["files"]

    [(volume, simulator_dir)] = [
        (name, path) for name, path in _named_volumes(services["simulator"]).items()
    ]
    assert str(targets_file.parent) == simulator_dir
    prometheus_dir = _named_volumes(services["prometheus"])[volume]
    assert str(Path(pattern).parent) == prometheus_dir
    assert targets_file.match(Path(pattern).name)
    assert simulator[simulator.index("--advertise") + 1] == "simulator:9400"


def test_prometheus_config_is_valid_for_promtool() -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not on PATH (Debian/Ubuntu: apt-get install prometheus)"

    finished = subprocess.run(
        [promtool, "check", "config", str(BASE_DIR / "deploy" / "prometheus" / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 0, finished.stdout + finished.stderr
