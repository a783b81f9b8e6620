"""raw_steps: a range query's answer from raw samples, as Prometheus' engine computes it."""

from __future__ import annotations

import math

import pytest

from ingest.raw_steps import StepQuery, at_steps, grid, step_answer, step_query

LOOKBACK = 300_000
NAN = float("nan")


def test_the_families_queries_are_parsed() -> None:
    assert step_query('max by (Hostname, instance, gpu) (DCGM_FI_DEV_GPU_UTIL{job="x"})') == (
        StepQuery(("Hostname", "instance", "gpu"), ('DCGM_FI_DEV_GPU_UTIL{job="x"}',))
    )
    assert step_query("max by (guid, port) ((a or b))") == StepQuery(("guid", "port"), ("a", "b"))
    assert step_query("max by (node) (timestamp(util))") == StepQuery(("node",), ("util",), True)


@pytest.mark.parametrize(
    "promql",
    [
        "sum by (node) (util)",
        "max by (node) (rate(util[5m]))",
        "max by (guid, port) (0 * a + on (guid) group_left () max by (guid) (b))",
        "max by (guid) (last_over_time(info[5m]))",
        "max by (node) (util > 3)",
    ],
)
def test_other_shapes_are_left_to_query_range(promql: str) -> None:
    assert step_query(promql) is None


def test_the_grid_is_query_ranges() -> None:
    assert grid(100, 190, 30.0) == [100_000, 130_000, 160_000, 190_000]
    assert grid(100, 100, 30.0) == [100_000]


def test_a_value_is_the_newest_sample_within_the_lookback() -> None:
    samples = [(0, 1.0), (30_000, 2.0), (45_000, 3.0)]
    times = [0, 30_000, 60_000, 345_000, 346_000]
    assert at_steps(samples, times, LOOKBACK, closed=True) == [
        (0, 0, 1.0),
        (30_000, 30_000, 2.0),
        (60_000, 45_000, 3.0),
        (345_000, 45_000, 3.0),  # exactly one lookback old: Prometheus 2 keeps it
    ]
    assert at_steps(samples, times, LOOKBACK, closed=False)[-1] == (60_000, 45_000, 3.0)


def test_a_staleness_marker_ends_the_series_until_its_next_sample() -> None:
    samples = [(0, 1.0), (30_000, None), (90_000, 4.0)]
    assert at_steps(samples, [0, 30_000, 60_000, 90_000], LOOKBACK, closed=True) == [
        (0, 0, 1.0),
        (90_000, 90_000, 4.0),
    ]


def test_max_by_groups_and_a_nan_gives_way() -> None:
    query = StepQuery(("node",), ("m",))
    raw = [
        [
            ([("__name__", "m"), ("gpu", "0"), ("node", "a")], [(0, NAN), (30_000, 5.0)]),
            ([("__name__", "m"), ("gpu", "1"), ("node", "a")], [(0, 2.0), (30_000, 7.0)]),
            ([("__name__", "m"), ("gpu", "0"), ("node", "b")], [(0, NAN)]),
        ]
    ]
    answer = step_answer(query, raw, [0, 30_000], LOOKBACK, closed=True)
    assert answer[0] == {"metric": {"node": "a"}, "values": [(0.0, 2.0), (30.0, 7.0)]}
    assert answer[1]["metric"] == {"node": "b"}
    assert [(t, math.isnan(v)) for t, v in answer[1]["values"]] == [(0.0, True), (30.0, True)]


def test_or_keeps_the_first_selectors_series_where_both_have_one() -> None:
    query = StepQuery(("node",), ("new", "old"))
    raw = [
        [([("__name__", "new"), ("node", "a")], [(30_000, 1.0)])],
        [
            ([("__name__", "old"), ("node", "a")], [(0, 9.0), (30_000, 9.0)]),
            ([("__name__", "old"), ("node", "b")], [(0, 3.0)]),
        ],
    ]
    assert step_answer(query, raw, [0, 30_000], LOOKBACK, closed=True) == [
        {"metric": {"node": "a"}, "values": [(0.0, 9.0), (30.0, 1.0)]},
        {"metric": {"node": "b"}, "values": [(0.0, 3.0), (30.0, 3.0)]},
    ]


def test_timestamp_is_the_samples_own_time() -> None:
    query = StepQuery(("node",), ("m",), timestamps=True)
    raw = [
        [
            ([("__name__", "m"), ("gpu", "0"), ("node", "a")], [(10_000, 1.0)]),
            ([("__name__", "m"), ("gpu", "1"), ("node", "a")], [(20_000, 1.0)]),
        ]
    ]
    assert step_answer(query, raw, [30_000, 60_000], LOOKBACK, closed=True) == [
        {"metric": {"node": "a"}, "values": [(30.0, 20.0), (60.0, 20.0)]}
    ]
