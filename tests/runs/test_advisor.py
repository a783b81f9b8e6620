"""The checkpoint advisor against Young's and Daly's formulas, computed by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from runs.advisor import (
    advise,
    daly_interval,
    expected_waste,
    format_duration,
    is_similar,
    median_interval,
    observed_mtbf,
    young_interval,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("delta", "mtbf", "young"),
    [
        (60.0, 44_640.0, math.sqrt(5_356_800.0)),
        (30.0, 3_600.0, 464.7580015448900),
        (300.0, 86_400.0, 7_200.0),
    ],
)
def test_young_is_sqrt_two_delta_m(delta: float, mtbf: float, young: float) -> None:
    assert young_interval(delta, mtbf) == pytest.approx(young, rel=1e-12)


@pytest.mark.parametrize(
    ("delta", "mtbf", "daly"),
    [
        # sqrt(2δM)·(1 + sqrt(δ/2M)/3 + (δ/2M)/9) − δ, worked by hand:
        (60.0, 44_640.0, 2314.4761829 * (1 + math.sqrt(60 / 89_280) / 3 + (60 / 89_280) / 9) - 60),
        (300.0, 86_400.0, 7200.0 * (1 + math.sqrt(300 / 172_800) / 3 + (300 / 172_800) / 9) - 300),
        (1_800.0, 1_000.0, math.sqrt(3_600_000.0) * (1 + math.sqrt(0.9) / 3 + 0.9 / 9) - 1_800.0),
    ],
)
def test_daly_below_two_m(delta: float, mtbf: float, daly: float) -> None:
    assert daly_interval(delta, mtbf) == pytest.approx(daly, rel=1e-9)


@pytest.mark.parametrize(
    ("delta", "mtbf"), [(2_000.0, 1_000.0), (5_000.0, 1_000.0), (7_200.0, 600.0)]
)
def test_daly_is_m_when_delta_at_least_two_m(delta: float, mtbf: float) -> None:
    assert daly_interval(delta, mtbf) == mtbf


def test_llama3_example_from_domain_notes() -> None:
    # 4,096 GPUs, job MTBF ≈ 12.4 h, δ = 60 s → T ≈ 38 min, ≈ 5% waste.
    mtbf = 12.4 * 3600
    interval = young_interval(60.0, mtbf)
    assert round(interval / 60) == 39 and interval == pytest.approx(2314.476, abs=1e-3)
    assert expected_waste(interval, 60.0, mtbf) == pytest.approx(
        60 / interval + interval / (2 * mtbf)
    )
    assert round(100 * expected_waste(interval, 60.0, mtbf)) == 5


def test_expected_waste_is_delta_over_t_plus_t_over_two_m() -> None:
    assert expected_waste(2_700.0, 120.0, 36_000.0) == pytest.approx(120 / 2_700 + 2_700 / 72_000)


def test_advise_states_current_and_optimal_plainly() -> None:
    times = [T0 + timedelta(minutes=45 * i) for i in range(6)]
    advice = advise(checkpoint_durations=[100.0, 120.0, 140.0], checkpoint_times=times,
                    similar_runs=4, exposure_seconds=4 * 36_000.0, crashes=4)  # fmt: skip
    assert advice.mtbf_seconds == 36_000.0
    assert advice.checkpoint_seconds == 120.0
    assert advice.current_interval_seconds == 2_700.0
    assert advice.young_seconds == pytest.approx(math.sqrt(2 * 120 * 36_000))
    assert advice.daly_seconds == pytest.approx(daly_interval(120.0, 36_000.0))
    assert advice.current_waste == pytest.approx(120 / 2_700 + 2_700 / 72_000)
    assert advice.optimal_waste == pytest.approx(
        expected_waste(advice.daly_seconds, 120.0, 36_000.0)
    )
    # Daly ≈ 2,860 s: 45 min is within 10% of it.
    assert (
        advice.summary
        == "checkpointing every 45 min, close to the optimal 48 min (expected waste 8%)"
    )


def test_advise_sentence_when_far_from_optimal() -> None:
    times = [T0 + timedelta(minutes=45 * i) for i in range(4)]
    advice = advise(checkpoint_durations=[60.0], checkpoint_times=times, similar_runs=2,
                    exposure_seconds=2 * 9_000.0, crashes=2)  # fmt: skip
    # M = 9,000 s, δ = 60 s: Daly ≈ 999.6 s; waste 60/2,700 + 2,700/18,000 = 17.2% → 6.0% + 5.6% = 11.6%.
    assert advice.daly_seconds == pytest.approx(999.62, abs=0.01)
    assert (
        advice.summary
        == "checkpointing every 45 min; 17 min would cut expected waste from 17% to 12%"
    )


def test_advise_without_crashes_says_mtbf_unknown() -> None:
    advice = advise(checkpoint_durations=[60.0], checkpoint_times=[T0], similar_runs=3,
                    exposure_seconds=3 * 7_200.0, crashes=0)  # fmt: skip
    assert advice.mtbf_seconds is None and advice.daly_seconds is None
    assert advice.summary == "no crashes among 3 similar runs over 6.0 h: MTBF unknown"


def test_advise_delta_beyond_two_m_warns() -> None:
    advice = advise(checkpoint_durations=[3_000.0], checkpoint_times=[T0, T0 + timedelta(hours=2)],
                    similar_runs=1, exposure_seconds=1_000.0, crashes=1)  # fmt: skip
    assert advice.daly_seconds == 1_000.0
    assert advice.summary.startswith("checkpoint writes (50 min) take longer than half the MTBF")


def test_similar_size_is_within_a_factor_of_two() -> None:
    assert is_similar(64, 32) and is_similar(64, 128) and is_similar(64, 64)
    assert not is_similar(64, 31) and not is_similar(64, 129)


def test_helpers() -> None:
    assert observed_mtbf(10_000.0, 0) is None and observed_mtbf(10_000.0, 4) == 2_500.0
    assert median_interval([T0, T0 + timedelta(seconds=60), T0 + timedelta(seconds=180)]) == 90.0
    assert median_interval([T0]) is None
    assert (format_duration(40), format_duration(2_700), format_duration(9_000)) == (
        "40 s",
        "45 min",
        "2.5 h",
    )
