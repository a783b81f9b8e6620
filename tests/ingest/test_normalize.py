"""Folding Prometheus answers into columns and computing stored values (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from ingest.normalize import (
    SATURATED_32,
    Collected,
    Column,
    HcaName,
    column_at,
    counter_max,
    fold,
    saturation_masks,
    split_hca,
)
from ingest.prometheus import PrometheusError
from ingest.sources.base import Window


def gpu_of(labels: Mapping[str, str]) -> tuple[str, int] | None:
    return (labels["node"], int(labels["gpu"])) if "node" in labels else None


def series(labels: dict[str, str], *points: list[object]) -> dict[str, object]:
    return {"metric": labels, "values": list(points)}


def test_fold_keeps_the_max_of_duplicate_series_and_counts_every_point_it_skips() -> None:
    result = [
        series({"node": "a", "gpu": "0", "instance": "x"}, [30, "1"], [60, "NaN"]),
        series({"node": "a", "gpu": "0", "instance": "y"}, [30, "3"], [60, "+Inf"]),
        series({"gpu": "1"}, [30, "5"], [60, "6"]),  # no node: both points skipped
        {"metric": "not a dict"},
        "not an item",
        series({"node": "b", "gpu": "0"}, ["bad"], [60, "2"]),
    ]
    folded: dict = {}

    skipped = fold(result, gpu_of, {}, folded)

    assert skipped == 2 + 2 + 1 + 1 + 1
    assert folded == {30.0: {("a", 0): 3.0}, 60.0: {("b", 0): 2.0}}


def test_a_malformed_answer_empties_its_column_and_counts_once() -> None:
    good = [series({"node": "a", "gpu": "0"}, [30, "1"])]
    answers = [
        (0, good),
        (1, PrometheusError("not JSON")),
        (1, good),  # a later chunk of the failed query is ignored
        (2, {"not": "a list"}),
    ]
    collected = Collected()

    collected.add_answers(["util", "tensor", "sm"], iter(answers), gpu_of)

    assert collected.columns == {"util": {30.0: {("a", 0): 1.0}}}
    assert collected.skipped == 2


def test_key_of_runs_once_per_label_set_across_a_pulls_columns() -> None:
    seen: list[Mapping[str, str]] = []

    def counting(labels: Mapping[str, str]) -> tuple[str, int] | None:
        seen.append(labels)
        return gpu_of(labels)

    answer = [series({"node": "a", "gpu": "0"}, [30, "1"])]
    Collected().add_answers(["util", "temp"], iter([(0, answer), (1, answer)]), counting)

    assert len(seen) == 1


def test_counters_handle_resets_missing_context_and_saturation() -> None:
    collected = Collected(
        columns={
            "tx": {
                0.0: {"up": 10.0, "reset": 50.0, "pegged": 1.0},
                30.0: {"up": 40.0, "reset": 5.0, "pegged": SATURATED_32, "new": 7.0},
            }
        }
    )
    keys = ["up", "new", "reset", "pegged", "absent"]

    increase = column_at(collected, Column("tx", "increase"), keys, 30, 30)
    rate = column_at(collected, Column("tx", "rate", 1 << 2), keys, 30, 30)
    gauge = column_at(collected, Column("tx", "gauge"), keys, 30, 30)

    assert increase == [30.0, None, 5.0, None, None]
    assert rate == [1.0, None, 5.0 / 30, None, None]
    assert gauge == [40.0, 7.0, 5.0, SATURATED_32, None]
    assert saturation_masks(collected, [Column("tx", "rate", 1 << 2)], 30) == {"pegged": 4}


def test_gauges_are_fetched_from_the_first_step_and_counters_from_the_context() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    window = Window(start, start + timedelta(minutes=1), 30)

    assert window.fetch_start("gauge") == start + timedelta(seconds=30)
    assert window.fetch_start("rate") == window.fetch_start("increase") == start


def test_a_narrow_counter_is_unknown_and_flagged_at_its_own_width() -> None:
    downed = Column("link_downed", "increase", 1 << 6, counter_max(8))
    collected = Collected(
        columns={"link_downed": {0.0: {"a": 254.0, "b": 3.0}, 30.0: {"a": 255.0, "b": 255.0}}}
    )
    assert column_at(collected, downed, ["a", "b"], 30, 30) == [None, None]
    assert saturation_masks(collected, [downed], 30) == {"a": 64, "b": 64}
    assert counter_max(4) == 15.0 and counter_max(32, 4) == 17179869180.0


def test_hostile_node_descriptions_never_become_nodes() -> None:
    hostile = [
        "Mellanox Technologies Aggregation Node",
        "MT4129 ConnectX7 Mellanox Technologies",  # firmware default before rdma-ndd runs
        'gpu-017"} 1 HCA-1',
        "gpu-017\nHCA-1",
        "gpu-017 HCA-1 extra",
        "-gpu HCA-1",
        "gpu-017 HCA-0",
        "gpu-017 HCA-1000",
        "gpu-017 MLX5_0",
        "../../etc mlx5_0",
        "gpu-017",
        "   ",
    ]
    assert [split_hca(h).node for h in hostile] == [""] * len(hostile)
    assert [split_hca(h).skip for h in hostile[:2]] == [
        "sharp_aggregation_node",
        "unrecognised_node_description",
    ]
    assert split_hca("  gpu-017.rack3  HCA-8 ") == HcaName("gpu-017.rack3", "mlx5_7")
    assert split_hca("worker20 hfi1_0") == HcaName("worker20", "hfi1_0")
