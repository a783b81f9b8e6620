"""The read API: heatmaps, rail matrices, series, latest values, health, on known stored rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction

from ingest import partitions, rollups, selectors
from ingest.health import check_ingest_lag
from ingest.models import IngestCursor
from ingest.selectors import heatmaps
from ingest.store import GPU_TABLE, IB_TABLE, insert_rows, upsert_nodes, upsert_ports

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def seed() -> None:
    """Two nodes × 2 GPUs × 20 steps (10 min); gpu-b's GPU 1 idles its tensor cores."""
    ids = upsert_nodes({"gpu-a": (T0, T0), "gpu-b": (T0, T0)})
    rows = []
    for step in range(1, 21):
        ts = T0 + timedelta(seconds=30 * step)
        for name in ("gpu-a", "gpu-b"):
            for gpu in (0, 1):
                tensor = 0.05 if (name, gpu) == ("gpu-b", 1) else 0.6
                rows.append(
                    (
                        ts,
                        ids[name],
                        gpu,
                        100.0,
                        tensor,
                        None,
                        None,
                        300.0,
                        60.0,
                        1e9,
                        0.0,
                        0.0,
                        0.0,
                        float(step == 5),
                    )
                )
    insert_rows(GPU_TABLE, rows)
    ports = upsert_ports([(ids["gpu-a"], "mlx5_0", 1, ""), (ids["gpu-a"], "mlx5_1", 1, "")])
    ib = [
        (T0 + timedelta(seconds=30 * s), pid, ids["gpu-a"], 1e9 * (i + 1), 2e9, None, None, 10.0,
         0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5e10, 4, 5, 0)
        for s in range(1, 21) for i, pid in enumerate(sorted(ports.values()))
    ]  # fmt: skip
    insert_rows(IB_TABLE, ib)
    rollups.refresh("gpu", T0, T0 + timedelta(minutes=10))
    rollups.refresh("ib", T0, T0 + timedelta(minutes=10))


def test_heatmap_buckets_and_sorts_worst_first() -> None:
    seed()
    matrix = selectors.heatmap("drift", T0, T0 + timedelta(minutes=10), 300, sort="worst")
    assert matrix.source == "rollup"  # a 300 s resolution reads rollups
    assert matrix.nodes == ["gpu-b", "gpu-a"]
    assert matrix.times == [T0, T0 + timedelta(minutes=5)]
    assert [[round(v, 3) for v in row] for row in matrix.values] == [
        [0.675, 0.675],
        [0.4, 0.4],
    ]  # gpu-b: mean of 1−0.6 and 1−0.05


def test_heatmap_on_raw_rows_sums_ports_and_counts_errors() -> None:
    seed()
    tx = selectors.heatmap("ib_tx", T0, T0 + timedelta(minutes=10), 60)
    assert tx.source == "raw" and tx.unit == "B/s"
    assert tx.values[0][1] == 3e9  # mlx5_0 1 GB/s + mlx5_1 2 GB/s
    errors = selectors.heatmap("nvlink_errors", T0, T0 + timedelta(minutes=10), 120)
    assert [sum(v or 0 for v in row) for row in errors.values] == [2.0, 2.0]  # step 5: one per GPU


def test_rail_matrix_and_node_series() -> None:
    seed()
    rails = selectors.rail_matrix("ib_tx", T0, T0 + timedelta(minutes=11))
    assert (rails.nodes, rails.rails, rails.values) == (
        ["gpu-a"],
        ["mlx5_0", "mlx5_1"],
        [[1e9, 2e9]],
    )
    series = selectors.node_gpu_series("gpu-b", T0, T0 + timedelta(minutes=10), 300)
    assert list(series.series) == ["0", "1"]
    assert series.series["1"]["tensor"] == pytest.approx([0.05, 0.05])


def test_samples_between_are_ordered_plain_rows() -> None:
    seed()
    rows = selectors.gpu_samples_between(T0, T0 + timedelta(minutes=1), nodes=["gpu-b"])
    assert [(r.node, r.gpu, r.ts, r.tensor) for r in rows] == [
        ("gpu-b", 0, T0 + timedelta(seconds=30), 0.6),
        ("gpu-b", 0, T0 + timedelta(seconds=60), 0.6),
        ("gpu-b", 1, T0 + timedelta(seconds=30), 0.05),
        ("gpu-b", 1, T0 + timedelta(seconds=60), 0.05),
    ]
    ib = selectors.ib_samples_between(T0, T0 + timedelta(seconds=30))
    assert [(r.device, r.tx_bytes, r.state) for r in ib] == [("mlx5_0", 1e9, 4), ("mlx5_1", 2e9, 4)]


def test_latest_per_node() -> None:
    seed()
    latest = selectors.latest_per_node(now=T0 + timedelta(minutes=10))
    assert latest["gpu-a"].active_ports == 2 and latest["gpu-a"].ib_tx == 3e9
    assert latest["gpu-b"].tensor == pytest.approx(0.325)


def test_readiness_reports_lag_only_after_ingest(settings) -> None:
    assert check_ingest_lag().detail == "no ingest yet"
    IngestCursor.objects.create(
        family="gpu", covered_until=datetime.now(UTC) - timedelta(seconds=30)
    )
    assert check_ingest_lag().ok
    IngestCursor.objects.filter(family="gpu").update(
        covered_until=datetime.now(UTC) - timedelta(hours=1)
    )
    assert not check_ingest_lag().ok


def test_old_partitions_are_dropped_and_recent_ones_kept(settings) -> None:
    settings.INGEST_RAW_RETENTION_DAYS = 14
    now = datetime(2026, 2, 1, tzinfo=UTC)
    with transaction.atomic():
        partitions.ensure_partitions(now - timedelta(days=20), now, partitions.RAW_TABLES[:1])
        dropped = partitions.drop_expired(now)
    # horizon = Jan 18 00:00: a day partition goes once its whole day is older. Partitions
    # that an earlier committing test left (same worker, any order) are older still: not ours.
    ours = [name for name in dropped if "ingest_gpusample_p20260112" <= name < "ingest_gpusample_q"]
    assert ours == [f"ingest_gpusample_p202601{day}" for day in range(12, 18)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT to_regclass('ingest_gpusample_p20260118')::text, to_regclass('ingest_gpusample_p20260117')"
        )
        assert cursor.fetchone() == ("ingest_gpusample_p20260118", None)


def test_heatmap_cells_have_four_significant_digits_and_gaps_stay_null() -> None:
    seed()
    ids = upsert_nodes({"gpu-c": (T0, T0)})
    sample = (None, None, None, None, 123456.789, 0.0, 0.0, 0.0, 0.0)
    insert_rows(GPU_TABLE, [(T0 + timedelta(seconds=330), ids["gpu-c"], 0, 1 / 3, 0.6, *sample)])
    rollups.refresh("gpu", T0, T0 + timedelta(minutes=10))
    window = (T0, T0 + timedelta(minutes=10))
    rows = selectors.heatmap_rows("gpu_util", *window, 300)
    assert rows.nodes == ["gpu-a", "gpu-b", "gpu-c"]
    assert rows.rows == ["[100,100]", "[100,100]", "[null,0.3333]"]  # gpu-c: 5 min only
    # 5-minute columns come from the heatmap tiles, which print the same 4-digit value in
    # float4's shortest form; the node rollup path prints it in %g form.
    assert selectors.heatmap_rows("nvlink_bw", *window, 300).rows[2] == "[null,123500]"
    assert selectors.heatmap_rows("nvlink_bw", *window, 300, tiles=False).rows[2] == (
        "[null,1.235e+05]"
    )
    assert selectors.heatmap("gpu_util", *window, 300).values[2] == [None, 0.3333]
    with connection.cursor() as cursor:  # the connection's next query prints floats in full
        cursor.execute("SELECT (1 / 3::float8)::text")
        assert cursor.fetchone() == ("0.3333333333333333",)


def test_heatmap_rows_put_columns_with_another_heap_order_into_one_node_order() -> None:
    columns = [(1, "7,3", "1.5,2"), (0, "3,7", "4,null"), (2, "3", "6"), (5, "3", "9")]
    assert heatmaps._json_rows(columns, 3) == {"3": "[4,2,6]", "7": "[null,1.5,null]"}
    assert heatmaps._json_rows([(0, "3,7", "1,2"), (1, "3,7", "3,4")], 2) == {
        "3": "[1,3]",
        "7": "[2,4]",
    }
