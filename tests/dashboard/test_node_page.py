"""The node page's series (page and JSON) over 6 h / 24 h / 7 d equal what the per-family
selectors give, value for value: one read of both families changes how, not what."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.test import Client

from dashboard import summaries
from dashboard.api import serialize
from dashboard.rounding import compact
from tests.ingest.test_node_tiles import T0, util, write_as_ingest
from tests.support.clock import forget_cached, pinned

pytestmark = pytest.mark.django_db
NOW = T0 + timedelta(hours=4)  # the data's last minute is 239, its cursor there


@pytest.fixture(autouse=True)
def keep_tiles(settings) -> None:  # noqa: ANN001
    """T0 is long past: the tiles' retention reaches back to it."""
    settings.INGEST_NODE_TILE_RETENTION_DAYS = 100 * 365


def per_family(name: str, start, end, step: int) -> tuple[dict, dict]:  # noqa: ANN001
    """The node's columns as the page read them before: each family on its own."""
    return (
        serialize.series_block(summaries.node_gpus(name, start, end, step)),
        serialize.series_block(summaries.node_ports(name, start, end, step)),
    )


def figure(page: str, element: str) -> dict:
    found = re.search(f'<script id="{element}" type="application/json">(.*?)</script>', page)
    assert found is not None, element
    return json.loads(found.group(1))


@pytest.mark.parametrize("window", ["6h", "24h", "7d"])
def test_node_json_and_page_equal_the_per_family_reads(
    logged_in_client: Client, window: str
) -> None:
    forget_cached()
    ids = write_as_ingest()
    with pinned(NOW):
        for name in ("gpu-a", "gpu-b", "gpu-late"):
            cache.clear()
            body = logged_in_client.get(f"/api/v1/nodes/{name}?window={window}").json()
            start, end = (datetime.fromisoformat(body[k]) for k in ("start", "end"))
            gpus, ports = per_family(name, start, end, body["step"])
            assert (body["gpus"], body["ports"]) == (gpus, ports), (name, window)
            page = logged_in_client.get(f"/nodes/{name}/?window={window}").content.decode()
            util_traces = [t for t in figure(page, "fig-gpus")["data"] if t["yaxis"] == "y"]
            assert [t["y"] for t in util_traces] == [gpus[g]["util"] for g in sorted(gpus)]
    # And they are the values written: gpu-a's GPU 0 in the column from minute 180, a 5-minute
    # bucket's mean (6 h and 24 h, from the tiles), or 7 d's 30-minute column: the mean of
    # its six buckets' means (from the rollups).
    gpu_a = per_family("gpu-a", start, end, body["step"])[0]["0"]
    column = gpu_a["times"].index(serialize.iso(T0 + timedelta(minutes=180)))
    buckets = [bucket_mean(ids["gpu-a"], m) for m in range(180, 210, 5)]
    expected = buckets[0] if window != "7d" else sum(buckets) / len(buckets)
    assert gpu_a["util"][column] == compact(expected)


def bucket_mean(node_id: int, first_minute: int) -> float:
    known = [
        u for m in range(first_minute, first_minute + 5) if (u := util(m, node_id, 0)) is not None
    ]
    return sum(known) / len(known)


def test_step_sums_skip_missing_values_as_adding_them_would() -> None:
    columns = (
        [None, -0.0, 1.5, None, 1e300, 0.1],
        [None, None, -0.0, 2.0, -1e300, 0.2],
        [None, -0.0, None, None, 1.0, 0.3],
    )
    sums = summaries._sum(*columns)
    assert [repr(v) for v in sums] == ["None", "0.0", "1.5", "2.0", "1.0", repr(0.1 + 0.2 + 0.3)]
    for j, value in enumerate(sums[1:], start=1):
        known = [column[j] for column in columns if column[j] is not None]
        assert repr(value) == repr(sum(known))
    assert summaries._sum([1.0, 2.0], [3.0, 4.0]) == [4.0, 6.0]


def test_a_cold_node_page_is_seven_queries_and_its_json_then_four(
    logged_in_client: Client,
    django_assert_num_queries,  # noqa: ANN001
) -> None:
    forget_cached()
    write_as_ingest()
    with pinned(NOW):
        cache.clear()
        logged_in_client.get("/nodes/gpu-a/?window=1h")  # the session now in Redis
        # user, node facts, both families' series, its runs (the runs app's selector), the
        # node's alerts, hardware, maintenance
        with django_assert_num_queries(7):
            assert logged_in_client.get("/nodes/gpu-a/").status_code == 200
        with django_assert_num_queries(4):  # user, node facts, runs, alerts: the columns cached
            assert logged_in_client.get("/api/v1/nodes/gpu-a").status_code == 200
