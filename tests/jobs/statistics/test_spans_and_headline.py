"""Two samples compared: ranges, the rank test and the A/A noise floor decide the headline."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.statistics.headline import (
    ALPHA,
    compare,
    headline,
    noise_floor,
    rank_test,
    same_threshold,
    separated_answer,
    separated_p,
)
from jobs.statistics.spans import Span, ratio_text

values = st.lists(st.floats(min_value=1.0, max_value=100.0, allow_nan=False), min_size=1,
                  max_size=12)


@settings(max_examples=30, deadline=None)
@given(low=values, gap=st.floats(min_value=0.01, max_value=50.0), high=values)
def test_apart_samples_have_the_exact_p_of_their_sizes_alone(low: list[float], gap: float,
                                                             high: list[float]) -> None:
    above = [v + max(low) - min(high) + gap for v in high]
    test = rank_test(low, above)
    assert test.mann_whitney_p == pytest.approx(separated_p(len(low), len(above)), rel=1e-9)
    assert test.ks_p == pytest.approx(separated_p(len(low), len(above)), rel=1e-9)
    assert (test.answer == "different") == (separated_answer(len(low), len(above)) == "different")


def test_three_against_three_can_never_differ() -> None:
    c = compare("decode tok/s", [30.0, 30.5, 31.0], [40.0, 40.5, 41.0], None)
    assert c and c.ranges_apart and c.rank.p == pytest.approx(0.1)
    assert c.rank.answer == "unknown" and c.answer == "undecided" and c.word == "not yet known"
    assert "at n = 3 against 3 the rank test's p is 0.1, above α = 0.05" in c.reason
    assert separated_p(3, 3) == pytest.approx(0.1) and separated_p(4, 4) < ALPHA


def test_four_against_four_apart_differs_when_no_floor_was_measured() -> None:
    c = compare("decode tok/s", [30.0, 30.5, 31.0, 30.2], [40.0, 40.5, 41.0, 40.1], None)
    assert c and c.answer == "differs" and c.rank.p == pytest.approx(2 / 70)
    assert "no A/A noise floor was measured" in c.reason


def test_the_noise_floor_holds_back_a_change_smaller_than_identical_code_showed() -> None:
    base, aa = Span.of([40.0, 41.0, 42.0, 43.0]), Span.of([38.0, 40.0, 43.0, 44.0])
    floor = noise_floor(aa, base)
    assert floor == pytest.approx(max(1 - 38 / 43, 44 / 40 - 1))
    small = compare("decode tok/s", [44.5, 45.0, 45.5, 46.0], [40.0, 41.0, 42.0, 43.0], floor)
    assert small and small.ranges_apart and small.rank.answer == "different"
    assert small.answer == "undecided" and "within the A/A noise floor (±11.6%)" in small.reason
    assert small.word == "not significant"  # more values would not make it larger than noise
    large = compare("decode tok/s", [60.0, 61.0, 62.0, 63.0], [40.0, 41.0, 42.0, 43.0], floor)
    assert large and large.answer == "differs" and "exceeds the A/A noise floor" in large.reason


def test_overlapping_ranges_never_differ_even_when_the_rank_test_says_different() -> None:
    rng = np.random.default_rng(7)
    base = list(rng.normal(100, 1, 30))
    arm = list(rng.normal(101.5, 1, 30))
    c = compare("decode tok/s", arm, base, None)
    assert c and not c.ranges_apart and c.rank.answer == "different"
    assert c.answer == "overlap" and c.reason == "the ranges overlap"
    assert c.word == "not significant"


def test_same_needs_enough_values_and_comes_with_more() -> None:
    assert same_threshold(3, 3) == 1.0  # at 3 against 3, "same" is never said
    assert same_threshold(10, 10) < same_threshold(6, 6) < 1.0
    rng = np.random.default_rng(3)
    a, b = list(rng.normal(50, 1, 12)), list(rng.normal(50, 1, 12))
    assert rank_test(a, b).answer == "same"


def test_the_same_code_case_of_the_issue_is_never_an_effect() -> None:
    # Identical code on a loaded host (load1 3 to 5 on 2 cores) measured these ranges.
    base, arm = [10.0, 11.0, 12.0], [13.03, 13.29, 15.26]
    c = compare("decode tok/s", arm, base, None)
    assert c and ratio_text(c.ratio) == "+26.0% (+8.6% to +52.6%)"
    assert c.answer == "undecided" and c.word == "not yet known"


def test_identical_code_on_a_noisy_host_rarely_differs_even_with_adaptive_repeats() -> None:
    """Same distribution for both arms, heavy-tailed load noise, repeats up to 10 while
    undecided: ranges only widen with n, so "differs" needs them apart at n = 4 already,
    which identical code reaches with probability 2/70."""
    rng = np.random.default_rng(1859)
    differs = 0
    trials = 400
    for _ in range(trials):
        arm, base = _loaded(rng, 3), _loaded(rng, 3)
        while True:
            a, b = Span.of(arm), Span.of(base)
            assert a and b
            answer, _ = headline(a, b, separated_answer(a.n, b.n), separated_p(a.n, b.n), None)
            if answer != "undecided" or len(arm) == 10:
                break
            arm, base = arm + _loaded(rng, 1), base + _loaded(rng, 1)
        differs += answer == "differs"
    assert differs / trials <= 2 / 70 + 0.02


def _loaded(rng: np.random.Generator, n: int) -> list[float]:
    # Throughput on a busy host: a base rate slowed by a random share of stolen time.
    return list(50.0 * (1 - rng.beta(2, 5, n) * 0.6))
