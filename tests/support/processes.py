"""Real processes for integration tests: a Celery worker, the ASGI server, Prometheus.

Each helper is a context manager that starts the process, waits until it really
serves (worker answers a ping, server answers /healthz, Prometheus /-/ready),
yields a handle and stops the process by its PID on the way out. Output goes to
a log file whose tail is put into every "did not start" error.

The environment handed to a subprocess comes from ``subprocess_env()``: the
pytest-django *test* database and the test Redis database, so a worker or server
sees what a transactional test committed and never touches a developer's data.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import requests

#: tests/settings.py's marker of the defaults it set (an xdist worker recomputes those).
DEFAULTED_MARKER = "CLUSTERWATCH_TEST_DEFAULTED"

BASE_DIR = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
PROMETHEUS_BINARY = "prometheus"
EMPTY_PROMETHEUS_CONFIG = "global:\n  scrape_interval: 15s\nscrape_configs: []\n"

T = TypeVar("T")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Poll ``predicate`` until it returns something truthy; TimeoutError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def _database_url(database: Mapping[str, object]) -> str:
    user = quote(str(database.get("USER") or ""), safe="")
    password = quote(str(database.get("PASSWORD") or ""), safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = database.get("HOST") or "127.0.0.1"
    port = database.get("PORT") or 5432
    return f"postgres://{credentials}{host}:{port}/{quote(str(database['NAME']), safe='')}"


#: ``subprocess_env(**PAUSED, INGEST_CHUNK_PAUSE_SECONDS="1")``: a subprocess on the test settings,
#: the only ones with the test-only chunk pause (tests/settings.py).
PAUSED = {"DJANGO_SETTINGS_MODULE": "tests.settings"}


def subprocess_env(**overrides: str) -> dict[str, str]:
    """The environment for a manage.py / celery / daphne subprocess of a test.

    Built from the running Django settings, so the subprocess uses the same test
    database (``test_…``, created by pytest-django), Redis database, Prometheus URL
    and SECRET_KEY (session cookies must verify in both processes).
    """
    from django.conf import settings
    from django.db import connection

    database_name = str(connection.settings_dict["NAME"])
    if not database_name.startswith("test_"):
        raise RuntimeError(
            f"the test database is not set up yet (DATABASE name is {database_name!r}): "
            "request the django_db_setup fixture before building a subprocess environment"
        )
    environment = dict(os.environ)
    # Else a subprocess on tests.settings would recompute the defaults as an xdist worker does.
    environment.pop(DEFAULTED_MARKER, None)
    # Browser tests allow sync ORM calls inside Playwright's loop in *this* process only.
    environment.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        PYTHONPATH=str(BASE_DIR),
        PYTHONUNBUFFERED="1",
        DATABASE_URL=_database_url(connection.settings_dict),
        REDIS_URL=settings.REDIS_URL,
        PROMETHEUS_URL=settings.PROMETHEUS_URL,
        SECRET_KEY=settings.SECRET_KEY,
        DEBUG="1" if settings.DEBUG else "0",
        ALLOWED_HOSTS=",".join(settings.ALLOWED_HOSTS),
        STATIC_ROOT=str(settings.STATIC_ROOT),
        METRICS_TOKEN=settings.METRICS_TOKEN,
        TIME_ZONE=settings.TIME_ZONE,
    )
    environment.update(overrides)
    return environment


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGKILL if pytest dies, so no orphan holds the test database."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError):  # a libc without that name: no safety net, still fine
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class RunningProcess:
    """A subprocess started by a test: its Popen, its log file; stopped by PID."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log(self) -> str:
        """Everything the process wrote to stdout and stderr so far."""
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def _signal(self, signum: signal.Signals) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        """SIGTERM (a graceful shutdown), then SIGKILL if still running after ``timeout`` s."""
        self._signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return self.kill()

    def kill(self) -> int:
        """SIGKILL: dies at once with no cleanup, as after an OOM kill (for fault tests)."""
        self._signal(signal.SIGKILL)
        return self.popen.wait(STOP_TIMEOUT_SECONDS)

    def not_ready(self, why: str) -> RuntimeError:
        state = "running" if self.alive() else f"exited with {self.popen.returncode}"
        return RuntimeError(f"{self.name} ({state}) {why}; log {self.log_path}:\n{self.log_tail()}")


@contextlib.contextmanager
def _log_directory(log_dir: Path | None) -> Iterator[Path]:
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        yield log_dir
        return
    with tempfile.TemporaryDirectory(prefix="clusterwatch-test-") as directory:
        yield Path(directory)


@contextlib.contextmanager
def run_process(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    ready: Callable[[RunningProcess], bool],
    log_dir: Path | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
) -> Iterator[RunningProcess]:
    """Start ``argv``, wait until ``ready(process)`` is true, yield it, stop it by PID."""
    with _log_directory(log_dir) as directory:
        log_path = directory / f"{name}-{uuid.uuid4().hex[:8]}.log"
        with log_path.open("wb") as log_file:
            popen = subprocess.Popen(
                list(argv),
                cwd=BASE_DIR,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in the terminal reaches pytest, which stops us
                preexec_fn=_die_with_parent,
            )
        process = RunningProcess(name, popen, log_path)
        try:
            _wait_ready(process, ready, timeout)
            yield process
        finally:
            process.stop()


def _wait_ready(
    process: RunningProcess, ready: Callable[[RunningProcess], bool], timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not ready(process):
        if not process.alive():
            raise process.not_ready("exited before it was ready")
        if time.monotonic() >= deadline:
            raise process.not_ready(f"not ready after {timeout:g} s")
        time.sleep(0.1)


def _answers_200(url: str) -> Callable[[RunningProcess], bool]:
    def ready(process: RunningProcess) -> bool:
        try:
            return requests.get(url, timeout=1).status_code == 200
        except requests.RequestException:
            return False

    return ready


@dataclass
class CeleryWorker:
    """A running ``celery -A config worker`` and the node name it answers pings as."""

    process: RunningProcess
    nodename: str
    queues: tuple[str, ...]

    def kill(self) -> int:
        """SIGKILL the worker (tasks in flight are lost to it, not acknowledged)."""
        return self.process.kill()

    def drain(self, queue: str, timeout: float = 20.0) -> None:
        """Return once the worker has run every task queued on ``queue`` before this call.

        A marker task (a heartbeat under a fresh name) goes to the back of the queue; the
        worker runs one task at a time (solo pool, prefetch 1, acks late) in queue order,
        so when the marker's row appears everything ahead of it has finished. A test checks
        effects after this, never after a guessed sleep.
        """
        from core.models import WorkerHeartbeat
        from core.tasks import record_worker_heartbeat

        marker = f"drain-{uuid.uuid4().hex[:8]}"
        record_worker_heartbeat.apply_async((marker,), queue=queue)
        found = lambda: WorkerHeartbeat.objects.filter(hostname=marker).exists()  # noqa: E731
        wait_until(found, timeout, f"the worker to drain queue {queue!r}")


def _worker_answers_ping(broker_url: str, nodename: str) -> Callable[[RunningProcess], bool]:
    from celery import Celery

    def ready(process: RunningProcess) -> bool:
        # Not set as current: tasks sent by the test must keep using the project's app.
        with Celery("clusterwatch-test-ping", broker=broker_url, set_as_current=False) as app:
            return bool(app.control.ping(destination=[nodename], timeout=0.5))

    return ready


@contextlib.contextmanager
def run_celery_worker(
    env: Mapping[str, str],
    queues: Sequence[str] | None = None,
    log_dir: Path | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
) -> Iterator[CeleryWorker]:
    """A real Celery worker (solo pool) on ``env["REDIS_URL"]``; ready once it answers a ping.

    Without ``queues`` it consumes every queue of the product (settings.WORKER_QUEUES).
    """
    from django.conf import settings

    queues = tuple(queues or settings.WORKER_QUEUES)
    nodename = f"test-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    argv = [PYTHON, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--concurrency=1"]
    argv += ["-l", "info", "-n", nodename, "--without-mingle", "--without-gossip"]
    argv += ["-Q", ",".join(queues)]
    ready = _worker_answers_ping(env["REDIS_URL"], nodename)
    with run_process("celery-worker", argv, env, ready, log_dir, timeout) as process:
        yield CeleryWorker(process, nodename, queues)


@dataclass
class AsgiServer:
    """A running web server (``config.serve``: uvicorn) serving ``config.asgi:application``."""

    process: RunningProcess
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


@contextlib.contextmanager
def run_asgi_server(
    env: Mapping[str, str],
    log_dir: Path | None = None,
    timeout: float = START_TIMEOUT_SECONDS,
    workers: int = 1,
    app: str | None = None,
) -> Iterator[AsgiServer]:
    """The web server as deployed (``python -m config.serve``) on a free port of 127.0.0.1.

    Ready once /healthz answers 200; ``workers`` processes (1: the server is this PID);
    ``app``: another ASGI application than config.asgi's (a benchmark's reference).
    """
    from config.serve import environment

    port = free_port()
    argv = [PYTHON, "-m", "config.serve", "--port", str(port), "--workers", str(workers)]
    argv += ["--app", app] if app else []
    ready = _answers_200(f"http://127.0.0.1:{port}/healthz")
    with run_process("web", argv, environment(dict(env)), ready, log_dir, timeout) as process:
        yield AsgiServer(process, port)


@dataclass
class Prometheus:
    """A running Prometheus with its own config file and TSDB directory."""

    process: RunningProcess
    port: int
    config_path: Path
    data_dir: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def run_prometheus(
    config: str = EMPTY_PROMETHEUS_CONFIG,
    workdir: Path | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = START_TIMEOUT_SECONDS,
) -> Iterator[Prometheus]:
    """Prometheus on a free port with ``config`` (YAML text) and a fresh TSDB; ready at /-/ready."""
    binary = shutil.which(PROMETHEUS_BINARY)
    if binary is None:
        raise RuntimeError("prometheus is not on PATH (Debian/Ubuntu: apt-get install prometheus)")
    with _log_directory(workdir) as directory:
        port = free_port()
        config_path = directory / "prometheus.yml"
        config_path.write_text(config)
        data_dir = directory / "tsdb"
        argv = [binary, f"--config.file={config_path}", f"--storage.tsdb.path={data_dir}"]
        argv += [f"--web.listen-address=127.0.0.1:{port}", *extra_args]
        ready = _answers_200(f"http://127.0.0.1:{port}/-/ready")
        with run_process("prometheus", argv, os.environ, ready, directory, timeout) as process:
            yield Prometheus(process, port, config_path, data_dir)
