"""Compacted history: every read path returns the same values before and after compaction.

One day of samples of two nodes (2 GPUs each, one port each) is stored hot, every read
path is run over it, the hours before the hot window are compacted (the day then spans
both layouts), and every read path must answer the same: exactly for the exact encodings,
within each encoding's documented precision otherwise. Crash tests kill a compaction in
the middle of an hour (an exception between its steps, and a subprocess SIGKILLed with
its hour moved but not committed) and require nothing lost and the next run to finish.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection, transaction

from alerts import inputs
from alerts.backtest import backtest
from alerts.services import load_rule_settings
from ingest import compaction, partitions, rollups, run_series, selectors
from ingest.health import compaction_metrics
from ingest.history import GPU_ENCODINGS, IB_ENCODINGS
from ingest.models import Compaction, IngestCursor
from ingest.store import (
    GPU_TABLE,
    GPU_VALUE_COLUMNS,
    IB_TABLE,
    insert_rows,
    upsert_nodes,
    upsert_ports,
)

pytestmark = pytest.mark.django_db
DAY = datetime(2026, 1, 5, tzinfo=UTC)
STEP = 30
#: Compaction "now": the hot window (6 h) starts at 20:00, so hours 00–19 are compacted.
NOW = DAY + timedelta(hours=26)
BASE_DIR = Path(__file__).resolve().parents[2]
ROLLUP_KEYS = {
    "ingest_gpurollup": "node_id, gpu, ts", "ingest_ibrollup": "port_id, ts",
    "ingest_noderollup": "ts, node_id", "ingest_heatmaptile": "metric, hour, node_id",
    "ingest_ibnodestep": "ts, node_id",
}  # fmt: skip


def _gpu_row(ts: datetime, node: int, gpu: int, k: int) -> tuple:
    drift = gpu == 0 and node % 2 == 0 and (3 <= ts.hour < 5 or 21 <= ts.hour < 22)
    util = 100.0 if drift else float((k * 7 + gpu * 13) % 101)
    if k == 500 and gpu == 1 and node % 2 == 1:
        util = 95.5  # not an integer: DCGM never sends one; this row stays hot
    tensor = 0.002 if drift else ((k * 7919 + gpu * 104729) % 1_000_000) / 1e6
    sm = None if gpu == 1 else (0.02 if drift else ((k * 31 + 5) % 1_000_000) / 1e6)
    power = 70.123456 if drift else 300 + ((k * 31) % 400_000) / 1000 + 0.000123
    crc = float(k % 997 == 0)
    return (ts, node, gpu, util, tensor, sm, 0.3, power, 40.0 + k % 30,
            float(k % 50) * 1024000, crc, 0.0, None, 0.0)  # fmt: skip


def _ib_row(ts: datetime, port: int, node: int, k: int) -> tuple:
    down = ts.hour == 7 and ts.minute < 2
    return (ts, port, node, 25071541715.2 + k * 17.1, 2.5e10 - k / 3, 6428600.4 + k, 6.4e6,
            62678.86 + k % 7, float(k % 701 == 0), float(down), 0.0, 0.0, 0.0, 0.0, 5e10,
            1 if down else 4, 5, int(k == 1234))  # fmt: skip


def seed(hours: float = 24.0) -> dict[str, int]:
    """``hours`` of GPU and IB samples from DAY; gpu-b misses 10 steps in hour 2."""
    ids = upsert_nodes({"gpu-a": (DAY, DAY), "gpu-b": (DAY, DAY)})
    ports = upsert_ports([(ids["gpu-a"], "mlx5_0", 1, ""), (ids["gpu-b"], "mlx5_0", 1, "")])
    gpu, ib = [], []
    for k in range(1, int(hours * 3600 / STEP) + 1):
        ts = DAY + timedelta(seconds=STEP * k)
        for name, node in ids.items():
            if name == "gpu-b" and 250 <= k < 260:
                continue
            gpu += [_gpu_row(ts, node, g, k) for g in (0, 1)]
        ib += [_ib_row(ts, port, key[0], k) for key, port in ports.items()]
    with transaction.atomic():
        insert_rows(GPU_TABLE, gpu)
        insert_rows(IB_TABLE, ib)
        end = DAY + timedelta(hours=hours)
        rollups.refresh("gpu", DAY, end)
        rollups.refresh("ib", DAY, end)
        for family in ("gpu", "ib"):
            IngestCursor.objects.update_or_create(family=family, defaults={"covered_until": end})
    return ids


def close(a: object, b: object, path: str = "") -> None:
    """Deep equality; floats within the loosest documented precision (float4, 1 mW)."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        close(dataclasses.asdict(a), dataclasses.asdict(b), path)  # type: ignore[arg-type]
    elif isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1.2e-7, abs_tol=5e-4), f"{path}: {a} != {b}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for key in a:
            close(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{path}: {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            close(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def samples_close(before: list, after: list, encodings: tuple, first: int) -> None:
    """Sample rows: exact encodings equal, scaled ones within 0.5 / scale, float4 within 2⁻²⁴."""
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        assert old[:first] == new[:first]
        for encoding, x, y in zip(encodings, old[first:], new[first:], strict=True):
            if (
                x is None
                or y is None
                or encoding.scale == 1
                or encoding.element == "double precision"
            ):
                assert x == y, (encoding.column, old, new)
            elif encoding.scale:
                assert abs(x - y) <= 0.5 / encoding.scale + 1e-12, (encoding.column, x, y)
            else:
                assert abs(x - y) <= abs(x) * 2**-24, (encoding.column, x, y)


def read_everything(ids: dict[str, int]) -> dict[str, object]:
    """Every read path over the day: selectors, rollup rebuild, alerts, runs, API inputs."""
    hour = lambda h: DAY + timedelta(hours=h)  # noqa: E731
    out: dict[str, object] = {
        "gpu": selectors.gpu_samples_between(DAY, hour(24)),
        "ib": selectors.ib_samples_between(DAY, hour(24)),
        "latest": selectors.latest_per_node(hour(24)),
    }
    for label, (lo, hi) in {
        "1h": (3, 4),
        "edge": (19.5, 20.5),
        "6h": (14, 20),
        "24h": (0, 24),
    }.items():
        start, end = hour(lo), hour(hi)
        out[f"node_gpu_{label}"] = selectors.node_gpu_series("gpu-a", start, end, 60)
        out[f"node_ib_{label}"] = selectors.node_ib_series("gpu-b", start, end, 60)
        out[f"rails_{label}"] = selectors.rail_matrix("ib_tx", start, end)
        out[f"rails_nvlink_{label}"] = selectors.rail_matrix("nvlink_errors", start, end)
        out[f"heatmap_{label}"] = selectors.heatmap("drift", start, end, 300, tiles=False)
    out["heatmap_raw"] = selectors.heatmap("gpu_util", hour(2), hour(3), 60)
    spans = [(n, hour(1), hour(23)) for n in ids.values()]
    out["run_gpu"] = run_series.gpu_series(spans, hour(1), hour(23))
    out["run_ib"] = run_series.ib_series(spans, hour(1), hour(23))
    out["run_gpus"] = run_series.gpus_per_node(list(ids.values()), DAY, hour(24))
    out["alerts"] = _alert_inputs()
    out["backtest"] = [
        (f.labels, f.since, f.fired_at, f.resolved_at)
        for f in backtest(
            "gpu_tensor_drift", 86400, {"require_run": False}, now=hour(24).timestamp()
        ).fired
    ]
    rollups.refresh("gpu", DAY, hour(24))  # the 5-minute rollups and tiles, rebuilt from raw
    rollups.refresh("ib", DAY, hour(24))
    with connection.cursor() as cursor:
        for table, key in ROLLUP_KEYS.items():
            cursor.execute(f"SELECT * FROM {table} ORDER BY {key}")  # noqa: S608
            out[table] = cursor.fetchall()
    return out


def _alert_inputs() -> dict[str, object]:
    rule_settings = load_rule_settings()
    data = inputs.fetch(rule_settings, now=(DAY + timedelta(hours=24)).timestamp(), span=86400)
    return {
        k: getattr(data, k)
        for k in ("gpu", "ib", "ib_errors", "nvlink", "throughput", "sample_times")
    }


def hot_and_history_counts() -> tuple[int, int, int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM ingest_gpuhot), (SELECT count(*) FROM ingest_gpuhistory),"
            " (SELECT count(*) FROM ingest_ibhot), (SELECT count(*) FROM ingest_ibhistory)"
        )
        return cursor.fetchone()


def test_every_read_path_answers_the_same_over_a_day_spanning_hot_and_compacted() -> None:
    ids = seed()
    before = read_everything(ids)
    report = compaction.compact(now=NOW)
    # Hours 00–19 of both tables (the 00:00 hour of the next day is still hot).
    assert (report.hours, report.leftover, report.pending_hours) == (40, 1, 0)
    gpu_hot, gpu_history, ib_hot, ib_history = hot_and_history_counts()
    # 4 hours + 1 step (next day) of 4 GPUs stay hot, and the 95.5 % row; 2 ports likewise.
    assert (gpu_hot, gpu_history) == (4 * (480 + 1) + 1, 4 * 20)
    assert (ib_hot, ib_history) == (2 * (480 + 1), 2 * 20)
    after = read_everything(ids)
    values = tuple(e for e in GPU_ENCODINGS if e.column in GPU_VALUE_COLUMNS)  # what it selects
    samples_close(before.pop("gpu"), after.pop("gpu"), values, 3)
    samples_close(before.pop("ib"), after.pop("ib"), IB_ENCODINGS, 4)
    assert before["backtest"] and len(before["alerts"]["gpu"]) > 1000  # the reads saw data
    close(before, after)


def test_partial_hours_keep_their_steps_and_tensor_stays_exact() -> None:
    seed(hours=4)
    with connection.cursor() as cursor:
        cursor.execute("SELECT ts, node_id, gpu, tensor, util FROM ingest_gpuhot ORDER BY 1, 2, 3")
        before = cursor.fetchall()
    compaction.compact(now=DAY + timedelta(hours=12))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT ts, node_id, gpu, tensor, util FROM ingest_gpu_rows(%s, %s) ORDER BY 1, 2, 3",
            [DAY, DAY + timedelta(hours=5)],
        )
        assert cursor.fetchall() == before  # bit for bit: 6-decimal ratios, integer util
        cursor.execute("SELECT cardinality(slots) FROM ingest_gpuhistory WHERE slots IS NOT NULL")
        assert (
            sorted(row[0] for row in cursor.fetchall()) == [1] * 4 + [110] * 2 + [119] * 4
        )  # 04:00; gpu-b hour 2; hour 0


#: (lo, hi) seconds from DAY: an hour's first and last steps (00:00 is absent: k starts at 1),
#: an hour's last step exactly on the bound and one microsecond short of it, a bound inside
#: gpu-b's missing steps, bounds between steps, one step, and nothing.
BOUNDS = [
    (0, 3600), (0, 3570), (3600, 7170), (3600, 7170 - 1e-6), (3600 + 1e-6, 7200),
    (7230, 14400), (7500, 7800), (7515, 9015), (3570, 3570), (3575, 3580), (0, 14400),
]  # fmt: skip


def test_the_readers_bounds_select_the_same_steps_from_history_as_from_hot_rows() -> None:
    seed(hours=4)
    sql = (
        "SELECT 'gpu', ts, node_id, gpu, tensor FROM ingest_gpu_rows(%(lo)s, %(hi)s) UNION ALL "
        "SELECT 'ib', ts, port_id, node_id, symbol_errors FROM ingest_ib_rows(%(lo)s, %(hi)s) "
        "ORDER BY 1, 2, 3, 4"
    )

    def read() -> list[list[tuple]]:
        with connection.cursor() as cursor:
            out = []
            for lo, hi in BOUNDS:
                bounds = {"lo": DAY + timedelta(seconds=lo), "hi": DAY + timedelta(seconds=hi)}
                cursor.execute(sql, bounds)
                out.append(cursor.fetchall())
            return out

    before = read()
    compaction.compact(now=DAY + timedelta(hours=12))
    assert hot_and_history_counts() == (0, 4 * 5, 0, 2 * 5)  # hours 00–04, all compacted
    after = read()
    # Rows per bound: 4 GPUs and 2 ports per step (steps k = 1…480, 30 s apart, bounds
    # inclusive), less gpu-b's 2 GPUs for its 10 missing steps (k 250–259).
    assert [len(rows) for rows in after] == [
        120 * 6, 119 * 6, 120 * 6, 119 * 6, 120 * 6, 240 * 6 - 10 * 2,
        11 * 6 - 10 * 2, 50 * 6 - 9 * 2, 6, 0, 480 * 6 - 10 * 2,
    ]  # fmt: skip
    assert after == before  # same steps, and these values are exact in both encodings


def test_late_rows_are_stored_once_and_merged_by_the_next_run() -> None:
    ids = seed(hours=3)
    compaction.compact(now=DAY + timedelta(hours=12))
    late = [
        _gpu_row(DAY + timedelta(seconds=STEP * k), ids["gpu-b"], g, k)
        for k in range(240, 262)
        for g in (0, 1)
    ]
    with transaction.atomic():
        written = insert_rows(GPU_TABLE, late)
    assert written == 20  # the 10 missing steps × 2 GPUs; the 12 compacted steps are skipped
    state = Compaction.objects.get(table="ingest_gpusample", day=DAY.date())
    assert (state.compacted_until, state.finished_at) == (DAY + timedelta(hours=2), None)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), count(DISTINCT (node_id, gpu, ts)) FROM ingest_gpu_rows(%s, %s)",
                       [DAY, DAY + timedelta(hours=4)])  # fmt: skip
        assert cursor.fetchone() == (4 * 360, 4 * 360)
    report = compaction.compact(now=DAY + timedelta(hours=12))
    assert report.hours == 4  # from the rewound hour 2 to the hot window (06:00)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ingest_gpuhot")
        assert cursor.fetchone() == (0,)
        cursor.execute(
            "SELECT hour, count(*) FROM ingest_gpuhistory WHERE slots IS NOT NULL GROUP BY 1"
        )  # hour 2 of gpu-b is whole again; hour 0 has 119 steps, hour 3 one
        assert dict(cursor.fetchall()) == {DAY: 4, DAY + timedelta(hours=3): 4}


def test_a_finished_day_is_truncated_keeping_what_could_not_be_compacted_and_metrics_count_it() -> (
    None
):
    seed()
    report = compaction.compact(now=DAY + timedelta(hours=31))
    assert report.days_finished == ["ingest_gpusample 2026-01-05", "ingest_ibsample 2026-01-05"]
    name = f"ingest_gpusample_p{DAY:%Y%m%d}"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT util FROM {name}")  # noqa: S608
        assert cursor.fetchall() == [(95.5,)]
    # gpu-b missed 10 steps; one row stays hot.
    families = {
        f.name: {tuple(s.labels.values()): s.value for s in f.samples}
        for f in compaction_metrics(DAY + timedelta(hours=31))
    }
    assert families["clusterwatch_compaction_rows"][("ingest_gpusample",)] == 4 * 2880 - 20 - 1
    assert families["clusterwatch_compaction_leftover_rows"][("ingest_gpusample",)] == 1
    assert families["clusterwatch_compaction_pending_hours"] == {
        ("ingest_gpusample",): 0,
        ("ingest_ibsample",): 0,
    }
    dropped = partitions.drop_expired(DAY + timedelta(days=16))
    assert {"ingest_gpuhistory_p20260105", "ingest_ibhistory_p20260105"} <= set(dropped)


class Crash(RuntimeError):
    pass


@pytest.mark.django_db(transaction=True)
def test_an_exception_between_steps_loses_nothing_and_the_next_run_finishes() -> None:
    seed(hours=3)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ingest_gpuhot ORDER BY 1, 2, 3")
        before = cursor.fetchall()

    def crash(step: str, table: object, hour: datetime) -> None:
        if step == "after_move" and hour == DAY + timedelta(hours=1):
            raise Crash(step)

    with pytest.raises(Crash):
        compaction.compact(now=DAY + timedelta(hours=12), hook=crash)
    assert Compaction.objects.get(table="ingest_gpusample").compacted_until == DAY + timedelta(
        hours=1
    )
    assert hot_and_history_counts()[:2] == (len(before) - 4 * 119, 4)  # hour 0 only (119 steps)
    report = compaction.compact(now=DAY + timedelta(hours=12))
    assert report.hours == 5 + 6  # the gpu hours 1–5, then ib 0–5 (the hot window is 06:00)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM ingest_gpu_rows(%s, %s) ORDER BY 1, 2, 3", [DAY, DAY + timedelta(days=1)]
        )
        samples_close(before, cursor.fetchall(), GPU_ENCODINGS, 3)


KILLED_RUN = """
import sys, time, django
django.setup()
from pathlib import Path
from datetime import datetime
from ingest import compaction

def stall(step, table, hour):
    if step == "after_move":
        Path(sys.argv[1]).write_text(hour.isoformat())
        time.sleep(120)

compaction.compact(now=datetime.fromisoformat(sys.argv[2]), hook=stall)
"""


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_hour_loses_nothing_and_the_next_run_finishes(tmp_path: Path) -> None:
    from tests.support.processes import subprocess_env

    seed(hours=2)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ingest_gpuhot ORDER BY 1, 2, 3")
        before = cursor.fetchall()
    marker, now = tmp_path / "moved", DAY + timedelta(hours=12)
    env = {**subprocess_env(), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    worker = subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", KILLED_RUN, str(marker), now.isoformat()], cwd=BASE_DIR, env=env
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and worker.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.read_text() == DAY.isoformat()  # hour 0 moved inside its transaction
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(10)
    _wait_for_backend_gone()
    assert hot_and_history_counts()[:2] == (len(before), 0)
    assert not Compaction.objects.exists()
    assert compaction.compact(now=now).hours == 6 + 6
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT * FROM ingest_gpu_rows(%s, %s) ORDER BY 1, 2, 3", [DAY, DAY + timedelta(days=1)]
        )
        samples_close(before, cursor.fetchall(), GPU_ENCODINGS, 3)


def _wait_for_backend_gone() -> None:
    """The killed client's backend rolls back and exits once it reads the closed socket."""
    deadline = time.monotonic() + 20
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.1)
    raise AssertionError("the killed worker's transaction is still open")


def test_compact_history_command_converts_the_stored_rows_with_a_progress_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from io import StringIO

    from django.core.management import call_command

    seed(hours=1)
    out = StringIO()
    # The clock past DAY's last hour + the hot window: only DAY is pending, whatever other
    # tests left in this database (today's partitions lie after that horizon).
    monkeypatch.setattr("core.clock.now", lambda: DAY + timedelta(hours=24 + 6))
    call_command("compact_history", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "pending: ingest_gpusample 24 h, ingest_ibsample 24 h"
    assert lines[1] == f"[{'.' * 30}]     1/48 hours  ingest_gpusample 2026-01-05 00:00"
    assert lines[48] == f"[{'#' * 30}]    48/48 hours  ingest_ibsample 2026-01-05 23:00"
    summary = lines[-1].split(" in ")
    assert summary[0] == "compacted 48 hours (720 rows, 0 left hot)"  # 4 GPUs + 2 ports × 120
    assert summary[1].endswith(" s; truncated 2 day partitions; 0 hours left")
    assert hot_and_history_counts() == (0, 8, 0, 4)
