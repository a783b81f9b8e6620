"""Hot GPU samples as step rows (``ingest.gpu_steps``): what is written where, exactly once,
and what every reader gets back (the values in compacted history's encodings)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test import override_settings

from ingest import gpu_steps
from ingest.models import GpuHotSample
from ingest.store import GPU_SAMPLE_TABLE, GPU_TABLE, insert_rows, stored_gpu_values, upsert_nodes

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
STEP = 30


def gpu(
    ts: datetime, node: int, index: int, util: float | None = 50.0, **values: float | None
) -> tuple:
    """A GPU_TABLE row: util, then tensor/sm/dram/power/temp/nvlink_bw and the NVLink errors."""
    order = ("tensor", "sm", "dram", "power", "temp", "nvlink_bw",
             "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay", "nvlink_recovery")  # fmt: skip
    defaults = {"tensor": 0.25, "power": 300.5, "temp": 41.0}
    return (ts, node, index, util, *(values.get(c, defaults.get(c)) for c in order))


def write(rows: list[tuple], table: object = GPU_TABLE) -> int:
    with transaction.atomic():
        return insert_rows(table, rows)  # type: ignore[arg-type]


def tables() -> tuple[list[tuple], list[tuple]]:
    """(step rows as (node, slot, ts, present, marks), per-GPU rows as (node, gpu, ts))."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT node_id, slot, ts, present, marks FROM {gpu_steps.TABLE} ORDER BY 1, 2, 3"
        )
        steps = cursor.fetchall()
        cursor.execute("SELECT node_id, gpu, ts FROM ingest_gpusample ORDER BY 1, 2, 3")
        return steps, cursor.fetchall()


def read(lo: datetime, hi: datetime) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT node_id, gpu, ts, util, tensor, power, temp, nvlink_bw, nvlink_crc_flit "
            "FROM ingest_gpu_rows(%s, %s) ORDER BY 1, 2, 3",
            [lo, hi],
        )
        return cursor.fetchall()


@pytest.fixture
def node() -> int:
    return upsert_nodes({"gpu-a": (T0, T0)})["gpu-a"]


def test_eight_gpus_of_a_step_are_one_row_and_read_back_as_eight(node: int) -> None:
    t1 = T0 + timedelta(seconds=STEP)
    written = write([gpu(t, node, g, util=float(g)) for t in (T0, t1) for g in range(8)])
    assert written == 16
    assert tables() == ([(node, 0, T0, 255, 0), (node, 0, t1, 255, 0)], [])
    rows = read(T0, t1)
    assert [(r[1], r[2], r[3]) for r in rows] == [
        (g, t, float(g)) for g in range(8) for t in (T0, t1)
    ]
    assert {r[4:8] for r in rows} == {(0.25, 300.5, 41.0, None)}
    assert GpuHotSample.objects.count() == 16


def test_values_keep_the_documented_precision(node: int) -> None:
    write([gpu(T0, node, 0, util=97.0, tensor=0.1234567, power=312.4567, nvlink_bw=1e10 / 3,
               nvlink_crc_flit=3.0, temp=40.0)])  # fmt: skip
    [row] = read(T0, T0)
    # tensor to 1e-6, power to 1 mW, nvlink_bw as float4; integers exact.
    assert row[3:] == (97.0, 0.123457, 312.457, 40.0, 3333333248.0, 3.0)


def test_samples_an_encoding_cannot_hold_stay_per_gpu_rows(node: int) -> None:
    off_grid = T0 + timedelta(seconds=7)
    rows = [
        gpu(T0, node, 0),  # fits
        gpu(T0, node, 1, util=95.5),  # DCGM never sends a non-integer util
        gpu(T0, node, 2, tensor=5000.0),  # × 1e6 overflows an integer
        gpu(T0, node, 3, util=None, tensor=None, power=None, temp=None),  # no value at all
        gpu(off_grid, node, 0),  # off the step grid
        gpu(T0, node, -1),  # a GPU index no slot holds
        gpu(T0, node, 9),  # fits, in slot 1
    ]
    assert write(rows) == 7
    assert tables() == (
        [(node, 0, T0, 0b1, 0), (node, 1, T0, 0b10, 0)],
        [(node, -1, T0), (node, 0, off_grid), (node, 1, T0), (node, 2, T0), (node, 3, T0)],
    )
    got = {(r[1], r[2]): r[3:5] for r in read(T0, off_grid)}
    assert got == {
        (-1, T0): (50.0, 0.25), (0, T0): (50.0, 0.25), (1, T0): (95.5, 0.25),
        (2, T0): (50.0, 5000.0), (3, T0): (None, None), (9, T0): (50.0, 0.25),
        (0, off_grid): (50.0, 0.25),
    }  # fmt: skip


def test_a_rerun_writes_nothing_and_a_late_gpu_joins_its_step_row(node: int) -> None:
    first = [gpu(T0, node, g, util=10.0) for g in (0, 1, 2)]
    assert write(first) == 3
    # The same window again, with GPU 5 late and GPU 1 now answering a different value.
    again = [*first, gpu(T0, node, 1, util=99.0), gpu(T0, node, 5, util=55.0)]
    assert write(again) == 1
    assert tables() == ([(node, 0, T0, 0b100111, 0)], [])
    assert [(r[1], r[3]) for r in read(T0, T0)] == [(0, 10.0), (1, 10.0), (2, 10.0), (5, 55.0)]
    assert write(again) == 0


def test_a_step_stored_per_gpu_is_not_written_again_as_a_step_row(node: int) -> None:
    with override_settings(INGEST_ENCODED_HOT_ROWS=False):
        assert write([gpu(T0, node, 0)]) == 1
    assert write([gpu(T0, node, 0, util=1.0), gpu(T0, node, 1)]) == 1
    assert tables() == ([(node, 0, T0, 0b10, 0)], [(node, 0, T0)])
    assert [(r[1], r[3]) for r in read(T0, T0)] == [(0, 50.0), (1, 50.0)]


def test_marks_are_set_per_row_and_the_partial_indexes_serve_the_rules(node: int) -> None:
    t1 = T0 + timedelta(seconds=STEP)
    write([gpu(T0, node, 0, util=95.0, tensor=0.01), gpu(T0, node, 1),
           gpu(t1, node, 3, nvlink_crc_data=2.0), gpu(t1, node, 4)])  # fmt: skip
    assert [(r[2], r[4]) for r in tables()[0]] == [(T0, 1), (t1, 2)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SET enable_seqscan = off"
        )  # a handful of rows: make the planner show its options
        cursor.execute(
            "EXPLAIN SELECT * FROM ingest_gpu_rows(%s, %s, 1) WHERE util >= 90 AND tensor <= 0.05",
            [T0, t1],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
        cursor.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = "
            "'ingest_gpustep_p20260302'::regclass AND pg_get_expr(indpred, indrelid) LIKE '%& 1) = 1)'"
        )
        [(drift_index,)] = cursor.fetchall()
    assert f"Index Scan using {drift_index} on ingest_gpustep_p20260302" in plan, plan
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT node_id, gpu, ts FROM ingest_gpu_rows(%s, %s, 1) WHERE util >= 90 AND tensor <= 0.05",
            [T0, t1],
        )
        assert cursor.fetchall() == [(node, 0, T0)]


def test_the_counters_carried_into_the_next_window_come_from_step_rows(node: int) -> None:
    write([gpu(T0, node, 2, nvlink_crc_flit=7.0)], GPU_TABLE)
    health = (T0, node, 3, *[None] * 11, 4.0, None, None, None, None)
    write([health], GPU_SAMPLE_TABLE)
    carried = stored_gpu_values(T0, ["nvlink_crc_flit", "ecc_dbe_vol"])
    assert carried == {"nvlink_crc_flit": {("gpu-a", 2): 7.0}, "ecc_dbe_vol": {("gpu-a", 3): 4.0}}
