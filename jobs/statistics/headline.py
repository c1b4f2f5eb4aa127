"""Two samples compared: the ranges, a rank test and the A/A noise floor make the headline.

An arm differs from the baseline only when the two ranges are apart, the rank test says
different, and the change exceeds the A/A noise floor where one was measured; with the ranges
overlapping it never will ("overlap"); anything else is "undecided", which more repeats may
decide (docs/statistics.md). Those are the rule's states, which adaptive repeats, bisect and
confirmation act on; what a user reads is one word, `word()`, the same in the record,
`compare`, `bisect` and `regressions`.
"""

import warnings
from collections.abc import Sequence
from functools import lru_cache
from math import comb
from typing import Literal

from jobs.statistics import exact
from jobs.statistics.spans import Ratio, Span
from jobs.strict import Lean

# The rank test says "different" at p <= ALPHA.
ALPHA = 0.05
# It says "same" when p is so high that a shift of SAME_SHIFT_IQR interquartile ranges would
# have given a lower p in SAME_POWER of all samples of these sizes (found by simulation).
SAME_SHIFT_IQR = 1.0
SAME_POWER = 0.99
_SIMULATIONS = 2000
_SEED = 1859  # fixed, so a record and its check compute the same thresholds
_IQR_IN_SD = 1.3489795003921634  # a normal distribution's interquartile range in sd
_ABOVE = 1 + 1e-9  # the relative margin that makes a p "above" the same-threshold

RankAnswer = Literal["different", "same", "unknown"]
Headline = Literal["differs", "overlap", "undecided"]
# The word a user reads. Every metric compared is a rate (tok/s, or a ratio of rates), so
# higher is faster.
Word = Literal["faster", "slower", "same", "not significant", "not yet known"]


class RankTest(Lean):
    """Mann-Whitney U and Kolmogorov-Smirnov, two-sided; the answer reads the smaller p.

    Mann-Whitney misses a change in spread, Kolmogorov-Smirnov a shift between tied values:
    either one's low p is evidence.
    """

    mann_whitney_p: float
    ks_p: float
    p: float
    alpha: float
    same_above: float
    answer: RankAnswer


class Comparison(Lean):
    """One arm against the baseline on one metric, with everything its answer rests on."""

    metric: str
    n: int
    n_baseline: int
    ratio: Ratio
    ranges_apart: bool
    rank: RankTest
    noise_floor: float | None
    answer: Headline
    # What the record prints, stored as printed: `benchfleet check` reads it again from the
    # numbers above and fails a record whose word they do not give.
    word: Word
    reason: str
    capped: bool = False


def compare(metric: str, arm: Sequence[float], base: Sequence[float],
            noise_floor: float | None) -> Comparison | None:
    """The comparison of two samples; None when either is empty or the baseline is not > 0."""
    a, b = Span.of(arm), Span.of(base)
    ratio = Ratio.of(a, b) if a and b else None
    if a is None or b is None or ratio is None:
        return None
    rank = rank_test(arm, base)
    answer, reason = headline(a, b, rank.answer, rank.p, noise_floor)
    return Comparison(metric=metric, n=a.n, n_baseline=b.n, ratio=ratio,
                      ranges_apart=not a.overlaps(b), rank=rank, noise_floor=noise_floor,
                      answer=answer, word=word(answer, rank.answer, ratio.mean), reason=reason)


def headline(arm: Span, base: Span, rank: RankAnswer, p: float,
             noise_floor: float | None) -> tuple[Headline, str]:
    """The headline rule, with the sentence that says why."""
    if arm.overlaps(base):
        return "overlap", "the ranges overlap"
    if rank != "different":
        return "undecided", (f"the ranges are apart, but at n = {arm.n} against {base.n} "
                                 f"the rank test's p is {p:.3g}, above α = {ALPHA}")
    change = arm.mean / base.mean - 1
    if noise_floor is not None and abs(change) <= noise_floor:
        return "undecided", (f"the ranges are apart and the rank test says different "
                                 f"(p = {p:.3g}), but the change {change:+.1%} is within the "
                                 f"A/A noise floor (±{noise_floor:.1%})")
    floor = (f"the change {change:+.1%} exceeds the A/A noise floor (±{noise_floor:.1%})"
             if noise_floor is not None else "no A/A noise floor was measured")
    return "differs", (f"the ranges are apart, the rank test says different (p = {p:.3g} ≤ "
                       f"{ALPHA}), and {floor}")


def word(answer: Headline, rank: RankAnswer, ratio_mean: float) -> Word:
    """The one word for a comparison (docs/statistics.md): faster or slower only where the
    headline rule says the two differ; same only where the ranges overlap and the rank test
    reached its same-threshold; not yet known where the ranges are apart but n is too small
    for the rank test to say different (more repeats decide it); otherwise not significant
    (pyperf's words; asv prints "~"): ranges that overlap, or a change within the A/A floor."""
    if answer == "differs":
        return "faster" if ratio_mean > 1 else "slower"
    if answer == "overlap":
        return "same" if rank == "same" else "not significant"
    return "not significant" if rank == "different" else "not yet known"


def compact_text(w: Word) -> str:
    """The word where a table has no room for it: asv's "~" for not significant."""
    return "~" if w == "not significant" else w


def noise_floor(aa: Span | None, base: Span | None) -> float | None:
    """The largest change the A/A arm's range allows against the baseline's, as a fraction."""
    ratio = Ratio.of(aa, base) if aa and base else None
    return max(1 - ratio.low, ratio.high - 1) if ratio else None


def separated_p(n_a: int, n_b: int) -> float:
    """The exact two-sided p of both tests when one sample lies wholly above the other.

    Both statistics then take their most extreme value, reached by 2 of the C(n_a + n_b, n_a)
    equally likely orderings; at 3 against 3 that is 0.1, so no test can say "different".
    """
    return min(1.0, 2 / comb(n_a + n_b, n_a))


def separated_answer(n_a: int, n_b: int) -> RankAnswer:
    """The rank test's answer for two samples whose ranges are apart: it depends on n alone."""
    return "different" if separated_p(n_a, n_b) <= ALPHA else "unknown"


def rank_test(a: Sequence[float], b: Sequence[float]) -> RankTest:
    mwu, ks = _p_values(a, b)
    p = min(mwu, ks)
    same_above = same_threshold(len(a), len(b))
    # "Above" by more than rounding: a p from scipy (samples sharing a value) can differ in its
    # last bit from the same p counted here, and the threshold is itself such a p.
    answer: RankAnswer = ("different" if p <= ALPHA else "same" if p > same_above * _ABOVE
                          else "unknown")
    return RankTest(mann_whitney_p=mwu, ks_p=ks, p=p, alpha=ALPHA,
                    same_above=same_above, answer=answer)


@lru_cache(maxsize=512)
def same_threshold(n_a: int, n_b: int) -> float:
    """Above this p the samples are "same": the SAME_POWER quantile of p under a real shift.

    Simulated with normal samples SAME_SHIFT_IQR interquartile ranges apart, the way
    Pinpoint derives its thresholds; it falls as n grows, so small samples stay "unknown".
    Mann-Whitney's p alone is simulated: the smaller of both tests' p is never above it, so
    the threshold errs towards "unknown". Simulated values never tie, so each p is U's.
    """
    import numpy as np

    rng = np.random.default_rng(_SEED)
    a = rng.normal(size=(_SIMULATIONS, n_a))
    b = rng.normal(SAME_SHIFT_IQR * _IQR_IN_SD, size=(_SIMULATIONS, n_b))
    u = (a[:, :, None] > b[:, None, :]).sum(axis=(1, 2))
    p = [exact.mann_whitney_p(int(x), n_a, n_b) for x in u]
    return float(np.quantile(p, SAME_POWER))


def _p_values(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Both tests' two-sided p: counted from the order in which the samples interleave
    (jobs/statistics/exact.py), which a record of thousands of groups repeats; scipy's where
    the values themselves matter."""
    order = exact.order_of(a, b)
    counted = exact.p_values(order) if order is not None else None
    # Where every order is as far apart (p = 1), scipy's exact sum can round above one and
    # give way to its asymptotic p: a record reads scipy's p there, as it always has.
    if counted is None or counted[1] == 1.0:
        return _scipy_p_values(a, b)
    return counted


def _scipy_p_values(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    return _scipy_p_values_of(tuple(a), tuple(b))


@lru_cache(maxsize=4096)
def _scipy_p_values_of(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float]:
    # Imported here: only samples sharing a value need it, and it costs a second.
    from scipy import stats

    method = "exact" if max(len(a), len(b)) <= exact.EXACT_UP_TO else "asymptotic"
    mwu = stats.mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue
    with warnings.catch_warnings():
        # Overlapping samples with ties can defeat Kolmogorov-Smirnov's exact p; scipy then
        # gives the asymptotic one, which is what we report.
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(mwu), float(stats.ks_2samp(a, b).pvalue)
