"""Workers and the push receiver raise the cyclic collector's thresholds (core.gc_tuning)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from celery.signals import worker_process_init

from core.gc_tuning import tune_gc


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_setting_is_applied(settings) -> None:  # noqa: ANN001
    settings.WORKER_GC_THRESHOLDS = [5000, 20, 30]
    assert tune_gc() == (5000, 20, 30)
    assert gc.get_threshold() == (5000, 20, 30)


def test_every_worker_process_applies_it_at_start(settings) -> None:  # noqa: ANN001
    import config.celery  # noqa: F401 - connects the signal handlers

    settings.WORKER_GC_THRESHOLDS = [100_000, 50, 100]
    gc.set_threshold(700, 10, 10)
    worker_process_init.send(sender=None)
    assert gc.get_threshold() == (100_000, 50, 100)
