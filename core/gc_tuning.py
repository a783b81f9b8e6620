"""The cyclic garbage collector's thresholds for processes that decode large answers.

An ingest cycle turns tens of MB of JSON (or remote-write protobuf) into millions of short-
and long-lived objects. At CPython's default thresholds (700, 10, 10) the collector runs
every 700 allocations and, as survivors pile up, walks the whole heap again and again:
measured on ingest's GPU and IB reads of one 512-node cycle (same process, alternated,
medians of 4), 1.60 s of CPU at the defaults against 0.85 s at (100,000, 50, 100)
(``bench/bench_gc.py``; bench/RESULTS.md "bench_gc-512"). Nothing in ingest builds reference cycles on purpose;
reference counting frees what a cycle drops, and the collector still runs, 140 times less
often. Applied by Celery workers (every process), ``manage.py ingest`` and
``manage.py push_receiver``; not by web processes, whose requests are small.
"""

from __future__ import annotations

import gc

from django.conf import settings


def tune_gc() -> tuple[int, int, int]:
    """Set ``gc.set_threshold`` from WORKER_GC_THRESHOLDS; returns what was set."""
    thresholds = tuple(settings.WORKER_GC_THRESHOLDS)
    gc.set_threshold(*thresholds)
    return thresholds  # type: ignore[return-value]
