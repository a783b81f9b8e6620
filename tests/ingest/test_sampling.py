"""ingest.sampling: counters from the samples' own timestamps at any scrape interval (pure)."""

from __future__ import annotations

from ingest.normalize import Collected, Column
from ingest.sampling import CARRIED, NEW, Sampling, Stepper

STEP = 30
T0 = 1_700_000_040  # a multiple of 60 (and of 30)
RATE = Column("tx", "rate")
ERRORS = Column("errors", "increase")
GAUGE = Column("temp", "gauge")
KEY = ("gpu-001", 0)


def steady() -> dict[str, dict[tuple[str, int], float]]:
    """What the window before stored for a counter rising 100/s (rate; increase over 30 s)."""
    return {"tx": {KEY: 100.0}, "errors": {KEY: 3000.0}}


def scraped(interval: float, until: float, offset: float = 0.0) -> list[tuple[float, float]]:
    """(sample time, value) of a counter rising 100/s since T0 - 600, scraped every interval."""
    samples, t = [], T0 - 600 + offset
    while t <= until:
        samples.append((t, 100.0 * (t - T0 + 600)))
        t += interval
    return samples


def at_steps(samples: list[tuple[float, float]], first: int, last: int) -> dict:
    """What a range query answers at each step: the newest sample in the 5-minute lookback."""
    answered = {}
    for ts in range(first, last + 1, STEP):
        seen = [s for s in samples if ts - 300 < s[0] <= ts]
        if seen:
            answered[ts] = seen[-1]
    return answered


def stepped(samples, steps: int = 8, carry=steady):
    """Stored values per column over (T0, T0 + steps*STEP], and the stepper."""
    answered = at_steps(samples, T0 - 240, T0 + steps * STEP)
    collected = Collected()
    for column in (RATE, ERRORS, GAUGE):
        collected.columns[column.name] = {
            ts: {KEY: value} for ts, (_when, value) in answered.items() if ts >= T0
        }
    at = {ts: {"gpu-001": when} for ts, (when, _value) in answered.items()}
    sampling = Sampling(at, STEP, 120.0)
    stepper = Stepper(collected, [KEY], STEP, sampling, lambda _c: ["gpu-001"], carry)
    times = range(T0 + STEP, T0 + steps * STEP + 1, STEP)
    values = {c.name: [stepper.values(c, ts)[0] for ts in times] for c in (RATE, ERRORS, GAUGE)}
    return values, stepper


def test_a_scrape_every_step_gives_the_increase_over_the_step_as_before() -> None:
    values, _ = stepped(scraped(30, T0 + 600))
    assert (values["tx"], values["errors"]) == ([100.0] * 8, [3000.0] * 8)


def test_a_15_s_scrape_at_a_30_s_step_gives_the_rate_over_the_step() -> None:
    values, _ = stepped(scraped(15, T0 + 600, offset=7))
    assert (values["tx"], values["errors"]) == ([100.0] * 8, [3000.0] * 8)


def test_a_60_s_scrape_carries_the_rate_on_the_step_between_samples_never_0_then_2x() -> None:
    values, _ = stepped(scraped(60, T0 + 600))
    # The 60 s increase (6,000) is spread over the two steps it spans: sums are kept.
    assert (values["tx"], values["errors"]) == ([100.0] * 8, [3000.0] * 8)
    assert values["temp"] == [60e3, 66e3, 66e3, 72e3, 72e3, 78e3, 78e3, 84e3]


def test_a_120_s_scrape_with_an_offset_is_the_true_rate_on_every_step() -> None:
    values, _ = stepped(scraped(120, T0 + 600, offset=17), steps=12)
    assert (values["tx"], values["errors"]) == ([100.0] * 12, [3000.0] * 12)


def test_a_carried_first_step_starts_from_what_the_window_before_stored_asked_only_then() -> None:
    asked: list[bool] = []

    def carry() -> dict[str, dict[tuple[str, int], float]]:
        asked.append(True)
        return {"tx": {KEY: 55.0}, "errors": {KEY: 1650.0}}

    values, stepper = stepped(scraped(60, T0 + 600, offset=-30), steps=2, carry=carry)
    assert (values["tx"], asked) == ([100.0, 100.0], [])  # T0+30 fresh, T0+60 carried
    assert stepper.carry_out(["tx", "errors"]) == steady()
    values, _ = stepped(scraped(60, T0 + 600), steps=2, carry=carry)
    assert (values["tx"], values["errors"], asked) == ([55.0, 100.0], [1650.0, 3000.0], [True])


def test_a_vanished_exporter_is_a_gap_one_scrape_interval_after_its_last_sample() -> None:
    values, _ = stepped(scraped(60, T0 + 90))  # last sample at T0+60; lookback still answers it
    assert values["tx"] == [100.0, 100.0, 100.0, None, None, None, None, None]
    assert values["temp"] == [60_000.0, 66_000.0, 66_000.0, None, None, None, None, None]


def test_a_counter_reset_counts_from_zero_over_the_samples_span() -> None:
    restarted = T0 + 90
    samples = [
        (t, v if t < restarted else 100.0 * (t - restarted)) for t, v in scraped(60, T0 + 600)
    ]
    values, _ = stepped(samples)
    # T0+120: 3,000 since the restart over the 60 s since the sample before (as Prometheus).
    assert values["tx"] == [100.0, 100.0, 100.0, 50.0, 50.0, 100.0, 100.0, 100.0]
    assert values["errors"] == [3000.0, 3000.0, 3000.0, 1500.0, 1500.0, 3000.0, 3000.0, 3000.0]


def test_states_name_fresh_carried_new_stale_and_unknown_units() -> None:
    at = {
        T0 - 30: {"a": T0 - 50, "b": T0 - 70, "e": T0 - 130},
        T0: {"a": T0 - 20, "b": T0 - 10, "e": T0 - 70},
        T0 + 30: {"a": T0 + 10, "b": T0 - 10, "c": T0 + 30, "e": T0 - 70},
    }
    sampling = Sampling(at, STEP, 120.0)
    states = sampling.states(["a", "b", "c", "d", "e"], T0 + 30)
    # a: new sample 30 s after the last; b: still the last (40 s old, interval 60); c: first
    # sample; d: never sampled (values over the step, as without sample times); e: 100 s old.
    assert states == [30.0, CARRIED, NEW, 30.0, None]
    assert sampling.detected() == 60.0  # spacings 30, 30, 60, 60


def test_without_sample_times_values_are_over_the_step_as_before() -> None:
    collected = Collected(columns={"tx": {T0: {KEY: 0.0}, T0 + 30: {KEY: 3000.0}}})
    assert Stepper(collected, [KEY], STEP).values(RATE, T0 + 30) == [100.0]
