"""The Celery app: settings from Django's (CELERY_*), tasks from every app."""

from __future__ import annotations

import logging
import os

from celery import Celery
from celery.signals import beat_init, worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("clusterwatch")
app.config_from_object("django.conf:settings", namespace="CELERY")
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
