"""The image's entrypoint, run locally with the command lines of the rendered manifests.

deploy/entrypoint.sh is started as the pods of overlays/small would start it (the args of
each container, the environment the kubelet builds from the ConfigMap, the Secret example
and the env entries), against the test Postgres and Redis and an empty Prometheus. What
changes for the test is listed in ``_local``: the test's database, Redis, Prometheus and keys,
127.0.0.1 and a free port instead of 0.0.0.0:8000, short beat intervals (so every worker gets
a task within seconds) with no initial backfill, and a temporary directory for the beat schedule.

Web is ready when /readyz says so; each worker when its liveness probe's own command (a ping
by the node name the entrypoint gives it) succeeds; beat when each worker has run a task beat
sent, which /metrics counts (clusterwatch_celery_task_outcomes_total).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import requests
from django.conf import settings
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families

from core.management.commands.migrate_locked import MIGRATE_LOCK_KEY
from core.metrics import TASK_OUTCOMES_KEY
from tests.support.processes import (
    RunningProcess,
    free_port,
    run_process,
    run_prometheus,
    subprocess_env,
    wait_until,
)

from .manifests import (
    ENTRYPOINT,
    Object,
    container_env,
    one,
    pod_containers,
    queues_of,
    secret_example,
    worker_nodename,
)

pytestmark = pytest.mark.django_db(transaction=True)

#: Environment the test keeps from its own settings (subprocess_env) over the manifests'.
TEST_OWN = ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "METRICS_TOKEN", "STATIC_ROOT")
#: Beat's periodic tasks, sent within seconds (the minimum each setting accepts), by queue.
BEAT_TASKS = {
    "alerts.notify.tasks.flush_notifications": ("ALERTS_NOTIFY_INTERVAL_SECONDS", "1"),
    "ingest.tasks.ingest_cycle": ("INGEST_INTERVAL_SECONDS", "5"),
    "alerts.tasks.evaluate_alerts": ("ALERTS_EVALUATION_INTERVAL_SECONDS", "5"),
}
WORKLOADS = ("web", "worker-ingest", "worker-alerts", "worker-notify", "beat")
START_SECONDS = 45.0


def _local(
    container: Object, objects: list[Object], prometheus_url: str, beat_dir: Path
) -> dict[str, str]:
    """The container's environment as the kubelet would build it, pointed at the test's services."""
    own = subprocess_env()
    environment = own | container_env(
        container, objects, secret_example(), {"status.podIP": "127.0.0.1"}
    )
    environment |= {name: own[name] for name in TEST_OWN}
    environment |= {name: value for name, value in BEAT_TASKS.values()}
    # The empty Prometheus has no history: no backfill, whose 5 s steps would lag /readyz.
    environment["INGEST_INITIAL_LOOKBACK_SECONDS"] = "0"
    environment |= {
        "PROMETHEUS_URL": prometheus_url,
        "LISTEN_HOST": "127.0.0.1",
        "BEAT_SCHEDULE_DIR": str(beat_dir),
        "HOSTNAME": socket.gethostname(),  # a pod's hostname is its name, which Celery's %h reads
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    return environment


@pytest.fixture(scope="module")
def small(rendered: dict[str, list[Object]]) -> list[Object]:
    return rendered["small"]


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with run_prometheus(workdir=tmp_path_factory.mktemp("prometheus")) as prometheus:
        yield prometheus.url


def _containers(objects: list[Object], workload: str) -> dict[str, Object]:
    deployment = one(objects, "Deployment", f"clusterwatch-{workload}")
    return {kind: container for kind, container in pod_containers(deployment)}


def _argv(container: Object) -> list[str]:
    assert "command" not in container, "the image's ENTRYPOINT runs, the manifest gives its args"
    return [str(ENTRYPOINT), *container["args"]]


def _ready(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False


def _task_outcomes(base_url: str, token: str) -> dict[tuple[str, str], float]:
    response = requests.get(
        f"{base_url}/metrics", headers={"Authorization": f"Bearer {token}"}, timeout=5
    )
    assert response.status_code == 200, response.text
    return {
        (s.labels["task"], s.labels["outcome"]): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
        if s.name == "clusterwatch_celery_task_outcomes_total"
    }


def _purge_broker() -> None:
    """Drop what beat queued and nobody ran: later tests' workers must not get it."""
    from config.celery import app

    app.control.purge()
    redis.Redis.from_url(settings.REDIS_URL).delete("unacked", "unacked_index")


def _waiting_for_migrate_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = %s",
            [MIGRATE_LOCK_KEY & 0xFFFFFFFF],
        )
        return cursor.fetchone()[0] == 1


def _start(container: Object, environment: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        _argv(container),
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_init_containers_migrate_in_turn_and_wait_for_migrations(
    small: list[Object], prometheus_url: str, tmp_path: Path
) -> None:
    migrate, wait = _containers(small, "web")["init"], _containers(small, "beat")["init"]
    with connection.cursor() as cursor:  # another pod's migrate init container, mid-migration
        cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATE_LOCK_KEY])
    processes = {
        container["name"]: _start(container, _local(container, small, prometheus_url, tmp_path))
        for container in (migrate, wait)
    }
    try:
        wait_until(_waiting_for_migrate_lock, 30, "the migrate init container waiting for the lock")
        assert processes["migrate"].poll() is None
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATE_LOCK_KEY])

    outputs = {name: process.communicate(timeout=60)[0] for name, process in processes.items()}

    assert {name: process.returncode for name, process in processes.items()} == {
        "migrate": 0,
        "wait-for-migrations": 0,
    }, outputs
    assert "No migrations to apply." in outputs["migrate"]
    assert "waiting" not in outputs["wait-for-migrations"]


def _answers_ping(nodename: str) -> bool:
    from config.celery import app

    return bool(app.control.ping(destination=[nodename], timeout=0.5))


def _liveness(container: Object, environment: dict[str, str]) -> subprocess.Popen[str]:
    command = container["livenessProbe"]["exec"]["command"]
    return subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_web_workers_and_beat_start_from_the_manifests_command_lines(
    small: list[Object], prometheus_url: str, tmp_path: Path
) -> None:
    port = free_port()
    environments = {}
    for workload in WORKLOADS:
        environments[workload] = _local(
            _containers(small, workload)["main"], small, prometheus_url, tmp_path
        )
    environments["web"]["PORT"] = str(port)
    base_url = f"http://127.0.0.1:{port}"
    token = environments["web"]["METRICS_TOKEN"]
    before = {
        key.decode(): float(value)
        for key, value in redis.Redis.from_url(settings.REDIS_URL)
        .hgetall(TASK_OUTCOMES_KEY)
        .items()
    }

    nodenames = {
        workload: f"{worker_nodename(queues_of(_containers(small, workload)['main']))}@{socket.gethostname()}"
        for workload in WORKLOADS
        if workload.startswith("worker-")
    }

    ready: dict[str, Callable[[], bool]] = {
        "web": lambda: _ready(f"{base_url}/readyz"),
        "beat": lambda: True,
    }
    ready |= {w: (lambda name=name: _answers_ping(name)) for w, name in nodenames.items()}

    with contextlib.ExitStack() as stack:
        stack.callback(_purge_broker)
        started: dict[str, RunningProcess] = {}
        for workload in WORKLOADS:  # all at once, then each waited for
            argv, environment = _argv(_containers(small, workload)["main"]), environments[workload]
            started[workload] = stack.enter_context(
                run_process(workload, argv, environment, RunningProcess.alive, tmp_path / "logs")
            )
        for workload, process in started.items():
            wait_until(
                lambda p=process, w=workload: ready[w]() or not p.alive(), START_SECONDS, workload
            )
            assert process.alive(), process.not_ready("exited before it was ready")
        # The liveness probe's own command, once (the others differ only by the node name pinged).
        probe = _liveness(
            _containers(small, "worker-ingest")["main"], environments["worker-ingest"]
        )
        probe_output, _ = probe.communicate(timeout=60)

        def every_beat_task_ran() -> bool:
            outcomes = _task_outcomes(base_url, token)
            return all(
                outcomes.get((task, "success"), 0) > before.get(f"{task}|success", 0)
                for task in BEAT_TASKS
            )

        wait_until(
            every_beat_task_ran, 45, "a successful run of each task beat sends", interval=0.5
        )
        readyz = requests.get(f"{base_url}/readyz", timeout=10)
        alive = {workload: process.alive() for workload, process in started.items()}

    assert (probe.returncode, probe_output.count("pong")) == (0, 1), probe_output
    assert readyz.status_code == 200, readyz.text
    assert {c["name"]: c["ok"] for c in readyz.json()["components"]} == {
        "postgres": True,
        "redis": True,
        "prometheus": True,
        "ingest": True,
    }
    assert alive == {workload: True for workload in WORKLOADS}
    assert list((tmp_path).glob("celerybeat-schedule*")), (
        "beat wrote no schedule in BEAT_SCHEDULE_DIR"
    )
