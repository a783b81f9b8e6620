"""Celery tasks run on a real worker through Redis and write to Postgres."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from core.models import WorkerHeartbeat
from core.tasks import record_worker_heartbeat
from tests.support.processes import (
    BASE_DIR,
    CeleryWorker,
    run_celery_worker,
    subprocess_env,
    wait_until,
)

pytestmark = pytest.mark.django_db(transaction=True)


def _heartbeat_recorded(hostname: str) -> bool:
    return WorkerHeartbeat.objects.filter(hostname=hostname).exists()


def test_task_sent_with_delay_runs_on_a_real_worker_and_writes_to_postgres(
    celery_worker: CeleryWorker,
) -> None:
    hostname = f"gpu-node-{uuid.uuid4().hex[:6]}"

    record_worker_heartbeat.delay(hostname=hostname)

    wait_until(lambda: _heartbeat_recorded(hostname), timeout=20, what="the heartbeat row")
    assert WorkerHeartbeat.objects.filter(hostname=hostname).count() == 1


def test_task_sent_before_a_worker_listens_runs_when_one_starts(tmp_path: Path) -> None:
    queue = f"test-{uuid.uuid4().hex[:8]}"  # only the worker below consumes it

    record_worker_heartbeat.apply_async(kwargs={"hostname": "sent-while-down"}, queue=queue)

    assert not _heartbeat_recorded("sent-while-down")
    with run_celery_worker(subprocess_env(), queues=[queue], log_dir=tmp_path) as worker:
        wait_until(
            lambda: _heartbeat_recorded("sent-while-down"), timeout=20, what="the heartbeat row"
        )
        assert worker.kill() == -signal.SIGKILL
        assert not worker.process.alive()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["-m", "celery", "-A", "config", "worker", "--pool=solo"], id="celery-worker"),
        pytest.param(
            ["-m", "celery", "-A", "config", "beat", "-s", "{tmp}/beat"], id="celery-beat"
        ),
        pytest.param(["-c", "import config.asgi"], id="asgi-app"),
    ],
)
def test_processes_without_system_checks_refuse_a_bad_environment(
    argv: list[str], tmp_path: Path
) -> None:
    env = subprocess_env(REDIS_URL="nonsense")
    command = [sys.executable, *(arg.replace("{tmp}", str(tmp_path)) for arg in argv)]

    finished = subprocess.run(
        command, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60
    )

    assert finished.returncode != 0
    assert (
        "REDIS_URL='nonsense': expected a URL like redis://host:port/..."
        in finished.stdout + finished.stderr
    )
