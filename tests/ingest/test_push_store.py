"""push_store: pushed samples held in memory, which steps they answer exactly, and the answers."""

from __future__ import annotations

import re

import pytest

from ingest.push_store import PushStore, hashmod, intervals, parse_shard
from ingest.raw_steps import StepQuery

LOOKBACK = 300_000
T = 1_772_452_800_000  # 2026-03-02 12:00 UTC, ms
UTIL = (("Hostname", "gpu-001"), ("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0"))
UTIL1 = (("Hostname", "gpu-001"), ("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "1"))
OLD = (("Hostname", "gpu-001"), ("__name__", "dcgm_gpu_utilization"), ("gpu", "1"))
BY_GPU = StepQuery(("Hostname", "gpu"), ("s0",))
EITHER = StepQuery(("Hostname", "gpu"), ("s0", "s1"))
SELECT_UTIL = [(0, "__name__", "DCGM_FI_DEV_GPU_UTIL")]
#: Another node's series, for a recent sample that keeps "nothing received lately" out of the way.
FRESH = (("Hostname", "gpu-009"), ("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0"))


def store(**overrides: object) -> PushStore:
    options = {
        "lookback_ms": LOOKBACK,
        "retention_ms": 900_000,
        "delay_ms": 15_000,
        "data_from_ms": T,
        "kept_name": re.compile(r"DCGM_FI_.*|dcgm_.*"),
    } | overrides
    made = PushStore(**options)  # type: ignore[arg-type]
    made.sender_seen(T - 3_600_000, T + 3_600_000)  # the sender started an hour before
    return made


def steps(first: int, last: int, step: int = 30_000) -> list[int]:
    return list(range(first, last + 1, step))


def test_answers_as_the_engine_does_with_staleness_and_lookback() -> None:
    held = store()
    held.add([(UTIL, [(T + 290_000, 50.0), (T + 320_000, 60.0), (T + 350_000, None)])])
    held.add([(UTIL, [(T + 380_000, 70.0)])])
    times = steps(T + 300_000, T + 420_000)
    result = held.answer(BY_GPU, [SELECT_UTIL], times, closed=True)
    # 330: 60 (320); 360: stale since 350, so absent; 390, 420: 70 (380).
    assert result == [
        {
            "metric": {"Hostname": "gpu-001", "gpu": "0"},
            "values": [
                (T / 1000 + 300, 50.0),
                (T / 1000 + 330, 60.0),
                (T / 1000 + 390, 70.0),
                (T / 1000 + 420, 70.0),
            ],
        }
    ]
    assert held.answered_ms == T + 420_000


def test_or_prefers_the_current_name_and_unknown_names_are_dropped() -> None:
    held = store()
    held.add(
        [
            (UTIL1, [(T + 400_000, 10.0)]),
            (OLD, [(T + 400_000, 99.0)]),
            ((("__name__", "node_cpu_seconds_total"),), [(T + 400_000, 1.0)]),
        ]
    )
    selectors = [SELECT_UTIL, [(0, "__name__", "dcgm_gpu_utilization")]]
    result = held.answer(EITHER, selectors, [T + 420_000], closed=True)
    # Same labels but for __name__: the first operand wins.
    assert result == [
        {"metric": {"Hostname": "gpu-001", "gpu": "1"}, "values": [(T / 1000 + 420, 10.0)]}
    ]
    assert held.counters.samples_ignored == 1
    assert held.counters.series_received == 2


def test_matchers_select_by_label() -> None:
    held = store()
    held.add([(UTIL, [(T + 400_000, 1.0)]), (UTIL1, [(T + 400_000, 2.0)])])
    assert [p for p, _ in held.series([*SELECT_UTIL, (2, "gpu", "1|2")])] == [UTIL1]
    assert [p for p, _ in held.series([*SELECT_UTIL, (1, "gpu", "1")])] == [UTIL]
    assert [p for p, _ in held.series([*SELECT_UTIL, (3, "gpu", "0")])] == [UTIL1]
    assert [p for p, _ in held.series([*SELECT_UTIL, (0, "missing", "")])] == [UTIL, UTIL1]


def test_out_of_order_and_late_samples_are_placed_and_counted() -> None:
    held = store()
    held.add([(UTIL, [(T + 400_000, 1.0), (T + 460_000, 3.0)])])
    held.answer(BY_GPU, [SELECT_UTIL], [T + 420_000], closed=True)
    held.add([(UTIL, [(T + 430_000, 2.0), (T + 460_000, 4.0), (T + 410_000, 9.0)])])
    assert held.by_name["DCGM_FI_DEV_GPU_UTIL"][UTIL] == [
        (T + 400_000, 1.0),
        (T + 410_000, 9.0),
        (T + 430_000, 2.0),
        (T + 460_000, 4.0),
    ]
    assert (held.counters.out_of_order, held.counters.late) == (3, 1)


def test_coverage_starts_one_lookback_after_the_process_and_ends_before_the_delay() -> None:
    held = store()
    now = T + 1_000_000
    held.add([(FRESH, [(now, 1.0)])])
    times = steps(T + 240_000, T + 990_000)
    missing = held.uncovered(times, now)
    # Steps before T + 300 s may need a sample older than the process; after now - 15 s,
    # Prometheus may still be sending.
    assert missing == [T + 240_000, T + 270_000, T + 990_000]
    assert intervals(missing, 30_000) == [(T + 240_000, T + 270_000), (T + 990_000, T + 990_000)]


def test_steps_after_the_last_sender_check_are_uncovered() -> None:
    held = store()
    held.add([(FRESH, [(T + 900_000, 1.0)])])
    held.checked_ms = T + 600_000
    assert held.uncovered(steps(T + 570_000, T + 660_000), T + 900_000) == [
        T + 630_000,
        T + 660_000,
    ]


def test_a_sender_restart_opens_a_gap_from_the_oldest_last_sample_to_a_lookback_after() -> None:
    held = store()
    restart = T + 600_000
    held.add(
        [
            (UTIL, [(T + 500_000, 1.0), (T + 590_000, 2.0)]),
            (UTIL1, [(T + 560_000, 5.0)]),  # its shard was behind: lost from 560 s on
            (OLD, [(T + 100_000, 7.0)]),  # inactive for over a lookback before the restart
        ]
    )
    assert held.sender_seen(restart, T + 2_000_000) is True
    assert held.sender_seen(restart, T + 2_005_000) is False  # the same start again
    held.add([(FRESH, [(T + 1_990_000, 1.0)])])  # new since: not in the gap's reckoning
    assert held.gaps == [(T + 560_000, restart + LOOKBACK)]
    times = steps(T + 540_000, T + 930_000)
    assert held.uncovered(times, T + 2_000_000) == steps(T + 570_000, T + 870_000)
    assert held.counters.sender_restarts == 1


def test_prune_keeps_each_series_newest_older_sample() -> None:
    held = store(retention_ms=600_000)
    held.add(
        [
            (
                UTIL,
                [(T + 300_000, 1.0), (T + 350_000, 2.0), (T + 400_000, 3.0), (T + 1_000_000, 4.0)],
            ),
            (UTIL1, [(T + 10_000, 9.0)]),
        ]
    )
    held.prune(T + 1_000_000)  # horizon T + 400 s: the newest sample before it stays
    assert held.by_name["DCGM_FI_DEV_GPU_UTIL"] == {
        UTIL: [(T + 350_000, 2.0), (T + 400_000, 3.0), (T + 1_000_000, 4.0)]
    }
    assert held.uncovered([T + 390_000, T + 400_000], T + 1_000_000) == [T + 390_000]


def test_steps_a_lookback_past_the_newest_sample_are_uncovered() -> None:
    # Nothing received yet (Prometheus not forwarding, or this shard sent elsewhere): no step
    # is answered "no series".
    held = store()
    now = T + 2_000_000
    times = steps(T + 600_000, T + 1_500_000, 300_000)
    assert held.uncovered(times, now) == times
    held.add([(UTIL, [(T + 700_000, 1.0)]), (UTIL1, [(T + 650_000, 2.0)])])
    assert held.newest_ms == T + 700_000
    # Covered while a sample may still be in the lookback (t - 300 s < 700 s), not after.
    assert held.uncovered(times, now) == [T + 1_200_000, T + 1_500_000]
    held.add([((("__name__", "node_cpu_seconds_total"),), [(T + 1_900_000, 1.0)])])
    assert held.newest_ms == T + 700_000  # a series ingest does not read does not count


def test_a_sharded_store_keeps_its_shard_and_a_misrouted_series_uncovers_everything() -> None:
    # Prometheus' hashmod (md5, last 8 bytes big-endian, mod N) of these instance values, with
    # N = 2: "10.0.0.1:9400" -> 1, "gpu-001:9400" -> 0 (tests/ingest/test_push_shards.py checks
    # the split against a real Prometheus' relabelling).
    ours = (("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0"), ("instance", "10.0.0.1:9400"))
    theirs = (("__name__", "DCGM_FI_DEV_GPU_UTIL"), ("gpu", "0"), ("instance", "gpu-001:9400"))
    held = store(shard=(1, 2))
    held.add([(ours, [(T + 600_000, 1.0)])])
    times = steps(T + 600_000, T + 660_000)
    assert held.uncovered(times, T + 900_000) == []
    assert held.counters.misrouted == 0
    held.add([(theirs, [(T + 630_000, 2.0)]), (ours, [(T + 630_000, 3.0)])])
    assert held.counters.misrouted == 1
    assert list(held.by_name["DCGM_FI_DEV_GPU_UTIL"]) == [ours]
    assert held.by_name["DCGM_FI_DEV_GPU_UTIL"][ours] == [(T + 600_000, 1.0), (T + 630_000, 3.0)]
    assert held.uncovered(times, T + 900_000) == times


def test_hashmod_and_shard_settings() -> None:
    assert [hashmod(v, 3) for v in ("gpu-001:9400", "gpu-002:9400", "10.0.0.1:9400", "")] == [
        2,
        0,
        1,
        1,
    ]
    assert parse_shard("") == (0, 1)
    assert parse_shard("2/4") == (2, 4)
    for bad in ("4/4", "1", "-1/2", "a/b", "1/0"):
        with pytest.raises(ValueError, match="expected I/N"):
            parse_shard(bad)
