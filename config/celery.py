"""The Celery app: settings from Django's (CELERY_*), tasks from every app."""

from __future__ import annotations

import fnmatch
import logging
import os
from typing import Any

from celery import Celery
from celery.signals import beat_init, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


class QueueTimeLimits:
    """Celery task annotation: each task gets the soft and hard time limits of its queue."""

    def annotate(self, task: Any) -> dict[str, int] | None:
        from django.conf import settings

        queue = queue_of(task.name, settings.CELERY_TASK_ROUTES, settings.CELERY_TASK_DEFAULT_QUEUE)
        limits = settings.TASK_TIME_LIMITS.get(queue)
        if limits is None:
            return None
        return {"soft_time_limit": limits[0], "time_limit": limits[1]}


def queue_of(task_name: str, routes: dict[str, dict[str, str]], default: str) -> str:
    """The queue CELERY_TASK_ROUTES sends ``task_name`` to (globs in order, as Celery matches)."""
    for pattern, route in routes.items():
        if fnmatch.fnmatchcase(task_name, pattern):
            return route.get("queue", default)
    return default


app = Celery("clusterwatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_annotations = [QueueTimeLimits()]
app.autodiscover_tasks()


@app.on_after_finalize.connect
def _install_schedule(sender: Celery, **_: object) -> None:
    from .schedule import beat_schedule

    sender.conf.beat_schedule = beat_schedule()


@worker_init.connect
@beat_init.connect
def _refuse_bad_environment(**_: object) -> None:
    """Workers and beat run no system checks: a bad environment variable stops them here."""
    from django.core.exceptions import ImproperlyConfigured

    from core.checks import stop_on_configuration_errors

    try:
        stop_on_configuration_errors()
    except ImproperlyConfigured as exc:
        # Celery logs and swallows exceptions raised by signal handlers; SystemExit it does not.
        logging.getLogger(__name__).critical("%s", exc)
        raise SystemExit(1) from exc


@worker_init.connect
@worker_process_init.connect
def _tune_gc(**_: object) -> None:
    """Workers decode large Prometheus answers: see core.gc_tuning."""
    from core.gc_tuning import tune_gc

    tune_gc()
