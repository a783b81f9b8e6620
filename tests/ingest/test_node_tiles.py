"""Hourly node tiles: a node's 5-minute series read from them equal the ones from the rollups."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from ingest import node_tiles, partitions, rollups, selectors
from ingest.models import IngestCursor, NodeTile
from ingest.store import GPU_TABLE, IB_TABLE, insert_rows, upsert_nodes, upsert_ports
from tests.support.encodings import float4

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
STEP = timedelta(seconds=60)
# node → the minutes (from T0, 4 h in all) it reports
PRESENCE = {
    "gpu-a": range(0, 240),
    "gpu-b": [m for m in range(0, 240) if m % 50 not in range(5, 12) and not 60 <= m < 125],
    "gpu-late": range(130, 240),
}
# node → its IB ports (device, port): gpu-b has two ports on one device (drawn as their mean)
PORTS = {"gpu-a": [("mlx5_0", 1), ("mlx5_1", 1)], "gpu-b": [("mlx5_0", 1), ("mlx5_0", 2)]}


def util(minute: int, node: int, gpu: int) -> float | None:
    """Whole numbers (exact sums, so a bucket mean is exact); a NULL now and then."""
    return None if (minute + gpu) % 17 == 0 else float((minute * 7 + node * 13 + gpu * 5) % 101)


def gpu_row(ts: datetime, minute: int, node: int, gpu: int) -> tuple:
    nvlink = (float(minute % 3 == 0), 0.0, float(gpu), 0.0)
    return (ts, node, gpu, util(minute, node, gpu), (minute % 20) / 20, None, None,
            300.0 + gpu, 60.0, 1e9 * (minute % 4), *nvlink)  # fmt: skip


def ib_row(ts: datetime, minute: int, port: int, node: int) -> tuple:
    tx = 1e9 * ((minute * 3 + port) % 11)
    counters = [float((minute + port) % 9 == 0), 0.0, 0.0, 0.0, 0.0, 0.0]
    state = 1 if (minute + port) % 13 == 0 else 4
    return (ts, port, node, tx, tx / 4, None, None, float(minute % 5), *counters, 5e10, state, 5,
            int(minute % 29 == 0))  # fmt: skip


def write(minutes: range) -> dict[str, int]:
    """Raw rows of ``minutes`` for the nodes present then, refreshed as ingest does."""
    ids = upsert_nodes({name: (T0, T0) for name in PRESENCE})
    ports = upsert_ports([(ids[n], d, p, "") for n, specs in PORTS.items() for d, p in specs])
    gpu, ib = [], []
    for minute in minutes:
        ts = T0 + minute * STEP
        for name, present in PRESENCE.items():
            if minute in present:
                gpu += [gpu_row(ts, minute, ids[name], g) for g in (0, 1)]
        for (node, _, _), port in ports.items():
            name = next(n for n, pk in ids.items() if pk == node)
            if minute in PRESENCE[name]:
                ib.append(ib_row(ts, minute, port, node))
    insert_rows(GPU_TABLE, gpu)
    insert_rows(IB_TABLE, ib)
    # As ingest commits a window (start, end]: its rows, their rollups, the cursor to end.
    start, end = T0 + (minutes[0] - 1) * STEP, T0 + minutes[-1] * STEP
    for family in ("gpu", "ib"):
        rollups.refresh(family, start, end)
        cursor, _ = IngestCursor.objects.get_or_create(
            family=family, defaults={"covered_until": end}
        )
        IngestCursor.objects.filter(pk=cursor.pk).update(
            covered_until=max(cursor.covered_until, end)
        )
    return ids


def write_as_ingest() -> dict[str, int]:
    """In chunks of a few steps, then rows of the first hour again (a re-ingest behind the
    cursor: its rollups and tiles are rewritten)."""
    write(range(0, 100))  # one refresh with holes inside an hour (gpu-b's 5-minute gaps)
    for first in range(100, 240, 7):
        write(range(first, min(first + 7, 240)))
    return write(range(30, 47))


WINDOWS = [
    (T0, T0 + timedelta(hours=4)),  # whole hours
    (T0 + timedelta(minutes=25), T0 + timedelta(minutes=215)),  # cuts the edge tiles
    (T0 + timedelta(minutes=3), T0 + timedelta(minutes=183)),  # start off the 5-minute grid
    (T0 + timedelta(seconds=90), T0 + timedelta(minutes=61, seconds=30)),  # and off the minute
    (T0 + timedelta(minutes=10), T0 + timedelta(minutes=22)),  # inside one tile, ragged end
    (T0 + timedelta(minutes=65), T0 + timedelta(minutes=120)),  # only gpu-b's gap hour
    (T0 - timedelta(hours=2), T0 + timedelta(hours=1)),  # starts before any data
]


@pytest.fixture(autouse=True)
def keep_tiles(settings) -> None:  # noqa: ANN001
    """T0 is long past: the tiles' retention reaches back to it (but in the retention test)."""
    settings.INGEST_NODE_TILE_RETENTION_DAYS = 100 * 365


@pytest.fixture
def written() -> dict[str, int]:
    return write_as_ingest()


def test_tiles_give_the_rollup_series_exactly(written: dict[str, int]) -> None:
    for read in (selectors.node_gpu_series, selectors.node_ib_series):
        for node in PRESENCE:
            for start, end in WINDOWS:
                tiles = read(node, start, end, 300)
                rollup = read(node, start, end, 300, tiles=False)
                assert tiles == rollup, (read.__name__, node, start, end)
    # The windows above do find data where there is some.
    assert len(selectors.node_ib_series("gpu-a", *WINDOWS[2], 300).series) == 2
    assert not selectors.node_gpu_series("gpu-b", *WINDOWS[5], 300).series
    assert list(selectors.node_gpu_series("gpu-a", *WINDOWS[5], 300).series) == ["0", "1"]


def test_tiled_columns_are_the_bucket_means_of_the_raw_rows(written: dict[str, int]) -> None:
    start = T0 + timedelta(minutes=3)  # columns [3, 8), [8, 13) … hold the buckets from 5, 10 …
    result = selectors.node_gpu_series("gpu-a", start, start + timedelta(hours=6), 300)
    node = written["gpu-a"]
    expected = []
    for column in range(72):
        bucket = 5 + 5 * column
        values = [util(m, node, 0) for m in range(bucket, bucket + 5) if bucket + 5 <= 240]
        known = [v for v in values if v is not None]
        expected.append(sum(known) / len(known) if known else None)
    assert result.series["0"]["util"] == expected
    assert result.times[0] == start and result.step == 300 and result.source == "rollup"
    assert (
        result.series["0"]["power"][:47] == [300.0] * 47
        and result.series["0"]["power"][47:] == [None] * 25
    )
    # IB: gpu-b's mlx5_0 is the mean of its two ports (of their bucket rollups: the mean tx,
    # the lowest state, a port that went down shows). Hot rows keep rates as real, and which
    # multiples of 1e9 a float4 holds exactly depends on the port ids (9e9 is 8,999,999,488).
    ib = selectors.node_ib_series("gpu-b", T0, T0 + timedelta(minutes=10), 300)
    ports = written_ports("gpu-b")
    tx = [float4(1e9 * ((m * 3 + p) % 11)) for m in range(0, 5) for p in ports]
    assert ib.series["mlx5_0"]["tx_bytes"][0] == sum(tx) / len(tx)
    lowest = [min(1 if (m + p) % 13 == 0 else 4 for m in range(0, 5)) for p in ports]
    assert ib.series["mlx5_0"]["state"][0] == sum(lowest) / 2
    assert ib.series["mlx5_0"]["tx_bytes"][1] is None  # minutes 5-9: gpu-b reports nothing


def written_ports(node: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.id FROM ingest_ibport p JOIN ingest_node n ON n.id = p.node_id WHERE n.name = %s",
            [node],
        )
        return sorted(row[0] for row in cursor.fetchall())


def test_a_tile_holds_an_hour_of_one_device(written: dict[str, int]) -> None:
    tile = NodeTile.objects.get(node_id=written["gpu-b"], family="gpu", hour=T0, device="0")
    # Minutes 5-11 and 55-59 missing: buckets 1 and 11 empty, bucket 2 from minute 12.
    assert tile.mask == 0b011111111101
    assert len(tile.cells) == 12 and {len(row) for row in tile.cells} == {11}
    assert tile.cells[1] == tile.cells[11] == [None] * 11
    assert tile.cells[2][0] == sum(util(m, written["gpu-b"], 0) for m in (12, 13, 14)) / 3
    tiles_of_b = NodeTile.objects.filter(node_id=written["gpu-b"], family="gpu", device="0")
    # No tile for the hour without data; the next lacks minutes 120-124 and 155-159.
    assert [(t.hour - T0, t.mask) for t in tiles_of_b.order_by("hour")] == [
        (timedelta(0), 0b011111111101),
        (timedelta(hours=2), 0b111101111110),
        # minutes 205-209; and 235-239, the bucket still filling at the cursor (239), untiled
        (timedelta(hours=3), 0b011111011111),
    ]
    assert NodeTile.objects.filter(family="ib", node_id=written["gpu-b"], hour=T0).count() == 1


def test_the_migration_tiles_the_rollups_already_stored(written: dict[str, int]) -> None:
    before = sorted(
        NodeTile.objects.values_list("node_id", "family", "hour", "device", "mask", "cells")
    )
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE ingest_nodetile")
    migration = importlib.import_module("ingest.migrations.0015_node_tiles")
    migration.backfill(None, connection.schema_editor())
    after = sorted(
        NodeTile.objects.values_list("node_id", "family", "hour", "device", "mask", "cells")
    )
    # GPUs: gpu-a 2 × 4 hours, gpu-b 2 × 3, gpu-late 2 × 2; IB devices: gpu-a 2 × 4, gpu-b 1 × 3
    assert after == before and len(before) == 8 + 6 + 4 + 8 + 3


def test_tiles_expire_before_the_rollups_and_older_windows_read_the_rollups(
    written: dict[str, int],
    settings,  # noqa: ANN001
) -> None:
    settings.INGEST_NODE_TILE_RETENTION_DAYS = 14
    dropped = partitions.drop_expired(now=T0 + timedelta(days=40))
    # (the raw samples' 14 days went too) but not the rollups' 180
    assert not [name for name in dropped if "rollup" in name or "heatmaptile" in name]
    assert any(name.startswith("ingest_nodetile_p") for name in dropped)
    assert not NodeTile.objects.exists()
    # Now (months after T0) the window is older than the retention: the rollups answer it.
    assert not node_tiles.covers(T0, T0 + timedelta(hours=4), 300)
    series = selectors.node_gpu_series("gpu-a", T0, T0 + timedelta(hours=4), 300)
    assert series == selectors.node_gpu_series(
        "gpu-a", T0, T0 + timedelta(hours=4), 300, tiles=False
    )
    assert series.series["0"]["power"] == [300.0] * 48


def test_the_last_buckets_come_from_the_rollups_until_tiled(written: dict[str, int]) -> None:
    assert node_tiles.tiled_before("gpu") == T0 + timedelta(minutes=230)
    window = (T0 + timedelta(hours=3), T0 + timedelta(hours=4))
    series = selectors.node_gpu_series("gpu-a", *window, 300).series["0"]["power"]
    assert series == [300.0] * 12  # the filling bucket (from the rollups) included
    # The next cycle completes bucket 235 and tiles it; the cursor moves on.
    write(range(240, 241))
    tile = NodeTile.objects.get(
        node_id=written["gpu-a"], family="gpu", hour=T0 + timedelta(hours=3), device="0"
    )
    assert tile.mask == 0b111111111111 and tile.cells[11][4] == 300.0
    assert node_tiles.tiled_before("gpu") == T0 + timedelta(minutes=235)
    IngestCursor.objects.all().delete()  # no cursor: what the tiles hold is not known
    assert node_tiles.tiled_before("gpu") is None
    assert selectors.node_gpu_series("gpu-a", *window, 300) == selectors.node_gpu_series(
        "gpu-a", *window, 300, tiles=False
    )


def test_other_steps_and_sub_second_bounds_read_the_rollups() -> None:
    assert node_tiles.covers(T0, T0 + timedelta(hours=6), 300)
    assert not node_tiles.covers(T0, T0 + timedelta(hours=6), 600)
    assert not node_tiles.covers(T0 + timedelta(microseconds=5), T0 + timedelta(hours=6), 300)
