"""Hourly heatmap tiles: the 5-minute heatmap read from them equals the one from node rollups."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from ingest import partitions, rollups, selectors
from ingest.heatmap_metrics import HEATMAP_METRICS
from ingest.models import HeatmapTile
from ingest.store import GPU_TABLE, IB_TABLE, insert_rows, upsert_nodes, upsert_ports

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
STEP = timedelta(seconds=60)
HTML_NAME = '<b>gpu&"x"</b>'
# node → the minutes (from T0, 4 h in all) it reports
PRESENCE = {
    "gpu-a": range(0, 240),
    HTML_NAME: [m for m in range(0, 240) if m % 50 not in range(5, 12)],  # 5-minute gaps
    "gpu-late": range(130, 240),  # appears mid-window
    "gpu-holed": [m for m in range(0, 240) if not 60 <= m < 125],  # a whole hour missing
}


def gpu_row(rng: random.Random, ts: datetime, node: int, gpu: int) -> tuple:
    magnitude = 10 ** rng.randint(-3, 10)
    util = rng.choice([None, round(rng.uniform(0, 100), 3), 100.0])
    tensor = rng.choice([0.05 * rng.randint(0, 20), rng.random(), None])
    nvlink = (
        rng.random() * magnitude,
        float(rng.random() < 0.1),
        0.0,
        0.0,
        float(rng.randint(0, 3)),
    )
    return (ts, node, gpu, util, tensor, None, None, 300.0, 60.0, *nvlink)


def ib_row(rng: random.Random, ts: datetime, port: int, node: int) -> tuple:
    rate = rng.random() * 10 ** rng.randint(3, 11)
    counters = [float(rng.random() < 0.05) for _ in range(6)]
    state = rng.choice([4, 4, 4, 1])
    return (
        ts,
        port,
        node,
        rate,
        rate / 3,
        None,
        None,
        rng.random() * 1e5,
        *counters,
        5e10,
        state,
        5,
        0,
    )


def write(minutes: range, seed: int) -> None:
    """Raw GPU and IB rows of ``minutes`` for the nodes present then, refreshed as ingest does."""
    rng = random.Random(seed)
    ids = upsert_nodes({name: (T0, T0) for name in PRESENCE})
    ports = upsert_ports(
        [(ids[n], f"mlx5_{i}", 1, "") for n in ("gpu-a", "gpu-holed") for i in (0, 1)]
    )
    gpu, ib = [], []
    for minute in minutes:
        ts = T0 + minute * STEP
        for name, present in PRESENCE.items():
            if minute in present:
                gpu += [gpu_row(rng, ts, ids[name], g) for g in (0, 1)]
        for (node, _, _), port in ports.items():
            if minute in PRESENCE["gpu-holed" if node == ids["gpu-holed"] else "gpu-a"]:
                ib.append(ib_row(rng, ts, port, node))
    insert_rows(GPU_TABLE, gpu)
    insert_rows(IB_TABLE, ib)
    for family in ("gpu", "ib"):
        rollups.refresh(family, T0 + minutes[0] * STEP, T0 + minutes[-1] * STEP)


def both_paths(metric: str, start: datetime, end: datetime, sort: str) -> tuple:
    tiles = selectors.heatmap_rows(metric, start, end, 300, sort)
    rollup = selectors.heatmap_rows(metric, start, end, 300, sort, tiles=False)
    return (
        (tiles.nodes, tiles.times, [json.loads(r) for r in tiles.rows]),
        (rollup.nodes, rollup.times, [json.loads(r) for r in rollup.rows]),
    )


WINDOWS = [
    (T0, T0 + timedelta(hours=4)),  # whole hours
    (T0 + timedelta(minutes=25), T0 + timedelta(minutes=215)),  # cuts the edge tiles
    (T0 + timedelta(minutes=10), T0 + timedelta(minutes=22)),  # inside one tile, ragged end
    (T0 + timedelta(minutes=65), T0 + timedelta(minutes=120)),  # only gpu-holed's gap hour
    (T0 - timedelta(hours=2), T0 + timedelta(hours=1)),  # starts before any data
]


def test_tiles_give_the_node_rollup_heatmap_exactly() -> None:
    # Written as ingest writes: in chunks of a few steps, and then rows arrive late for
    # buckets already refreshed (the node rollups and tiles are rewritten).
    write(range(0, 100), seed=1)
    for first in range(100, 240, 7):
        write(range(first, min(first + 7, 240)), seed=first)
    write(range(30, 47), seed=99)  # late rows: rewrites buckets of the first hour
    for metric in HEATMAP_METRICS:
        for sort in ("name", "topology", "worst"):
            for start, end in WINDOWS:
                tiles, rollup = both_paths(metric, start, end, sort)
                assert tiles == rollup, (metric, sort, start, end)


def test_tiles_cover_the_nodes_with_data_and_null_their_gaps() -> None:
    write(range(0, 240), seed=7)
    window = WINDOWS[1]
    result = selectors.heatmap("gpu_util", *window, 300)
    assert result.source == "rollup" and len(result.times) == 38
    assert sorted(result.nodes) == sorted(PRESENCE)  # code-point order: '<' before 'g'
    assert result.nodes[0] == HTML_NAME
    holed = result.values[result.nodes.index("gpu-holed")]
    assert holed[7:19] == [None] * 12 and None not in holed[:7] + holed[21:]
    late = result.values[result.nodes.index("gpu-late")]
    assert late[:21] == [None] * 21
    only_gap_hour = selectors.heatmap("gpu_util", *WINDOWS[3], 300)
    assert "gpu-holed" not in only_gap_hour.nodes and "gpu-a" in only_gap_hour.nodes


def test_a_tile_holds_an_hour_of_display_values_and_expires_with_the_rollups(settings) -> None:  # noqa: ANN001
    write(range(0, 60), seed=3)
    tile = HeatmapTile.objects.get(metric="gpu_util", hour=T0, node__name=HTML_NAME)
    row = selectors.heatmap("gpu_util", T0, T0 + timedelta(hours=1), 300, tiles=False).values
    assert tile.cells == row[0] and tile.mask == 0b011111111101  # no minute of buckets 1 and 11
    settings.INGEST_ROLLUP_RETENTION_DAYS = 1
    dropped = partitions.drop_expired(now=T0 + timedelta(days=40))
    assert any(name.startswith("ingest_heatmaptile_p") for name in dropped)
    assert not HeatmapTile.objects.exists()
