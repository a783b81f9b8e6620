"""The rule inputs read compacted history as they read hot rows: health rows, gone GPUs, GPU counts.

The hardware rules' reads (``rule_inputs.gpu_health``, ``rule_inputs.xid_gone``) and the
attribution's GPU counts (``placement.gpu_counts``) go through ``ingest_gpu_rows``: the
same answer, value for value, before and after the hours they read are compacted.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from ingest import compaction
from ingest.models import IngestCursor, XidEvent
from ingest.selectors import placement, rule_inputs
from ingest.selectors.rule_rows import GoneXid, GpuHealthPoint
from ingest.store import GPU_SAMPLE_TABLE, insert_rows, upsert_nodes

pytestmark = pytest.mark.django_db
DAY = datetime(2026, 1, 5, tzinfo=UTC)
STEP = 30
GAP = 90.0
#: The samples span 01:00–03:00; compaction at 10:00 moves every hour before 04:00 (6 h hot).
COMPACT_AT = DAY + timedelta(hours=10)
HEALTHY = (0.0, 0.0, 0.0, 0.0, 0.0)


def at(hours: float) -> datetime:
    return DAY + timedelta(hours=hours)


def sample(ts: datetime, node: int, gpu: int, health: tuple = HEALTHY) -> tuple:
    """A GPU sample whose values every history encoding holds exactly (integer util and °C)."""
    return (ts, node, gpu, 40.0, 0.25, 0.5, 0.1, 300.5, 50.0, 1.0e6, 0.0, 0.0, 0.0, 0.0, *health)


def seed() -> int:
    """gpu-a 01:00–03:00: GPU 0 with an ECC error at 01:30 and a thermal throttle at 02:00;
    GPU 1 gone by XID 79 at 01:20 (stale samples to 01:25), back at 02:10."""
    node = upsert_nodes({"gpu-a": (at(1), at(3))})["gpu-a"]
    rows = []
    for k in range(1, 240 + 1):
        ts = at(1) + timedelta(seconds=STEP * k)
        health = HEALTHY
        if ts == at(1.5):
            health = (2.0, 0.0, 0.0, 0.0, 0.0)
        elif ts == at(2):
            health = (0.0, 0.0, 0.0, 0.0, float(0x40))
        rows.append(sample(ts, node, 0, health))
        if not at(1) + timedelta(minutes=25) < ts < at(2) + timedelta(minutes=10):
            rows.append(sample(ts, node, 1))
    with transaction.atomic():
        insert_rows(GPU_SAMPLE_TABLE, rows)
        XidEvent.objects.create(node_id=node, gpu=1, ts=at(1) + timedelta(minutes=20), code=79,
                                message="GPU has fallen off the bus")  # fmt: skip
        IngestCursor.objects.create(family="gpu", covered_until=at(3))
    return node


def hot_and_history() -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM ingest_gpuhot), (SELECT count(*) FROM ingest_gpuhistory)"
        )
        return cursor.fetchone()


def reads(node: int) -> tuple[list, list, dict]:
    window = [at(0.5).timestamp(), at(3).timestamp()]
    return (
        rule_inputs.gpu_health(window, 0x20 | 0x40 | 0x08 | 0x80),
        rule_inputs.xid_gone(at(0.5).timestamp(), at(3).timestamp(), GAP, [79]),
        placement.gpu_counts([node], at(2.5).timestamp(), at(3).timestamp()),
    )


def test_health_rows_gone_gpus_and_gpu_counts_read_compacted_hours_as_hot_ones() -> None:
    node = seed()
    expected = (
        [
            GpuHealthPoint("gpu-a", 0, at(1.5).timestamp(), 2.0, 0.0, 0.0, 0.0, 0),
            GpuHealthPoint("gpu-a", 0, at(2).timestamp(), 0.0, 0.0, 0.0, 0.0, 0x40),
        ],
        [
            GoneXid(
                "gpu-a",
                1,
                (at(1) + timedelta(minutes=20)).timestamp(),
                79,
                "GPU has fallen off the bus",
                (at(2) + timedelta(minutes=10)).timestamp(),
            ),
        ],  # fmt: skip
        {node: 2},
    )
    hot_rows = 240 + 240 - (45 * 2 - 1)  # GPU 1 misses 01:25:30 … 02:09:30
    assert hot_and_history() == (hot_rows, 0)
    assert reads(node) == expected
    report = compaction.compact(now=COMPACT_AT)
    # Hours 01:00 and 02:00 of both GPUs, and the 03:00 sample (its hour is past the edge too).
    # Every sample moved: hours 01:00, 02:00 and 03:00 (its one sample) of both GPUs.
    assert (report.rows, report.leftover) == (hot_rows, 0)
    assert hot_and_history() == (0, 6)
    assert reads(node) == expected
