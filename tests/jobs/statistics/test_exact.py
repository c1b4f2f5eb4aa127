"""The rank tests counted in integers give scipy's p: the same samples, both ways."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from jobs.statistics import exact
from jobs.statistics.headline import (
    _IQR_IN_SD,
    _SEED,
    _SIMULATIONS,
    SAME_POWER,
    SAME_SHIFT_IQR,
    _p_values,
    _scipy_p_values,
    rank_test,
    same_threshold,
)

# Few distinct values, so that ties inside a sample, and between the two, come often.
sample = st.lists(st.integers(min_value=0, max_value=40).map(float), min_size=1, max_size=26)


@settings(max_examples=300, deadline=None)
@given(a=sample, b=sample, apart=st.booleans())
def test_counted_p_values_are_scipys(a: list[float], b: list[float], apart: bool) -> None:
    if apart:  # no value in both samples: the order is defined, and counted
        b = [v + 0.5 for v in b]
        assert exact.order_of(a, b) is not None or max(len(a), len(b)) > exact.EXACT_UP_TO
    ours, theirs = _p_values(a, b), _scipy_p_values(a, b)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-300)


@settings(max_examples=100, deadline=None)
@given(a=sample, b=sample)
def test_the_order_stands_for_the_values_only_where_it_is_defined(a: list[float],
                                                                   b: list[float]) -> None:
    order = exact.order_of(a, b)
    assert (order is None) == (bool(set(a) & set(b)) or (
        max(len(a), len(b)) > exact.EXACT_UP_TO
        and len(set(a)) + len(set(b)) < len(a) + len(b)))
    if order is not None:
        assert len(order) == len(a) + len(b) and order.count(0) == len(a)


@pytest.mark.parametrize("n", [5, 7, 13])
def test_perfectly_interleaved_samples_read_scipys_p(n: int) -> None:
    """D = 1/n has p = 1, which scipy's exact sum overshoots at these n and then approximates."""
    a, b = [2.0 * i for i in range(n)], [2.0 * i + 1 for i in range(n)]
    assert exact.p_values(exact.order_of(a, b))[1] == 1.0
    assert _p_values(a, b) == _scipy_p_values(a, b)


def test_the_exact_distribution_counts_every_order_once() -> None:
    for n_a, n_b in [(1, 1), (3, 3), (4, 7), (20, 20)]:
        counts = exact.u_counts(n_a, n_b)
        assert sum(counts) == exact.comb(n_a + n_b, n_a)
        assert counts == counts[::-1]  # U and n_a * n_b - U are equally likely


@pytest.mark.parametrize(("n_a", "n_b"), [(3, 3), (5, 5), (6, 9), (12, 12), (30, 25)])
def test_the_same_threshold_is_scipys_simulation(n_a: int, n_b: int) -> None:
    rng = np.random.default_rng(_SEED)
    a = rng.normal(size=(_SIMULATIONS, n_a))
    b = rng.normal(SAME_SHIFT_IQR * _IQR_IN_SD, size=(_SIMULATIONS, n_b))
    method = "exact" if max(n_a, n_b) <= exact.EXACT_UP_TO else "asymptotic"
    p = stats.mannwhitneyu(a, b, alternative="two-sided", method=method, axis=1).pvalue
    assert same_threshold(n_a, n_b) == pytest.approx(float(np.quantile(p, SAME_POWER)),
                                                     rel=1e-9)


def test_a_p_equal_to_the_threshold_but_for_its_last_bit_is_not_above_it() -> None:
    """Samples sharing a value get scipy's p; at 6 against 6 it can equal the threshold, which
    is counted here and may differ in the last bit: the answer is "unknown", as it was when
    both came from scipy."""
    a, b = [7.0, 3.0, 4.0, 10.0, 6.0, 12.0], [10.0, 4.0, 6.0, 8.0, 6.0, 9.0]
    test = rank_test(a, b)
    assert test.p == pytest.approx(test.same_above, rel=1e-12)
    assert test.answer == "unknown"
