"""Both rank tests' two-sided p from the order in which two samples interleave, in integers.

Without values shared between the samples, Mann-Whitney's U and Kolmogorov-Smirnov's D depend
only on that order (ties inside one sample change neither), and their exact null
distributions only on the sizes: every order is equally likely. Counting orders gives the
exact p that scipy's `mannwhitneyu(method="exact")` and `ks_2samp` compute in floating point
(tests/jobs/statistics/test_exact.py holds the two to 1e-9), without importing scipy, which
costs a record about a second and 100 MB. Values shared between the samples, and ties beyond
the exact range where Mann-Whitney's normal approximation corrects for them, stay scipy's
(jobs/statistics/headline.py).
"""

from collections.abc import Sequence
from functools import lru_cache
from math import comb, erfc, sqrt

# Mann-Whitney's exact distribution up to this many values per sample, its normal
# approximation (with continuity correction) beyond, as the headline rule asks of scipy.
EXACT_UP_TO = 20

Order = tuple[int, ...]  # the merged samples' sides, lowest value first: 0 the arm, 1 the base


def order_of(a: Sequence[float], b: Sequence[float]) -> Order | None:
    """The interleaving order, or None where a value is in both samples (the order is not
    defined) or ties beyond the exact range would change the normal approximation."""
    if set(a) & set(b):
        return None
    if max(len(a), len(b)) > EXACT_UP_TO and len(set(a)) + len(set(b)) < len(a) + len(b):
        return None
    return tuple(side for _, side in sorted([(v, 0) for v in a] + [(v, 1) for v in b]))


@lru_cache(maxsize=4096)
def p_values(order: Order) -> tuple[float, float]:
    """Mann-Whitney's and Kolmogorov-Smirnov's two-sided p for one order."""
    n_a = order.count(0)
    n_b = len(order) - n_a
    return mann_whitney_p(_u(order), n_a, n_b), ks_p(_d(order, n_a, n_b), n_a, n_b)


def mann_whitney_p(u_a: int, n_a: int, n_b: int) -> float:
    """Two-sided p of U (the arm's U, as pairs where the arm is higher)."""
    u = max(u_a, n_a * n_b - u_a)
    if max(n_a, n_b) <= EXACT_UP_TO:
        counts = u_counts(n_a, n_b)
        return min(1.0, 2 * sum(counts[u:]) / comb(n_a + n_b, n_a))
    spread = sqrt(n_a * n_b * (n_a + n_b + 1) / 12)
    z = (u - n_a * n_b / 2 - 0.5) / spread
    return min(1.0, max(0.0, erfc(z / sqrt(2))))


@lru_cache(maxsize=256)
def u_counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """How many of the C(n_a + n_b, n_a) orders give each U from 0 to n_a * n_b.

    The highest value belongs to the arm (it is above all n_b others) or to the baseline
    (it adds nothing): f(a, b, u) = f(a - 1, b, u - b) + f(a, b - 1, u).
    """
    if n_a == 0 or n_b == 0:
        return (1,)
    without_arm, without_base = u_counts(n_a - 1, n_b), u_counts(n_a, n_b - 1)
    return tuple((without_arm[u - n_b] if 0 <= u - n_b < len(without_arm) else 0)
                 + (without_base[u] if u < len(without_base) else 0)
                 for u in range(n_a * n_b + 1))


def ks_p(d: int, n_a: int, n_b: int) -> float:
    """Two-sided p of D, given as D * n_a * n_b (an integer): the share of orders whose
    empirical distributions come at least that far apart somewhere."""
    if d == 0:
        return 1.0
    total = comb(n_a + n_b, n_a)
    return (total - _paths_inside(d, n_a, n_b)) / total


def _paths_inside(d: int, n_a: int, n_b: int) -> int:
    """Lattice paths from (0, 0) to (n_a, n_b) on which |i * n_b - j * n_a| < d throughout."""
    row = [0] * (n_b + 1)
    for i in range(n_a + 1):
        for j in range(n_b + 1):
            if abs(i * n_b - j * n_a) >= d:
                row[j] = 0
            elif i or j:
                row[j] = row[j] + (row[j - 1] if j else 0) if i else row[j - 1]
            else:
                row[j] = 1
    return row[n_b]


def _u(order: Order) -> int:
    """The arm's U: pairs where the arm's value is above the baseline's."""
    below = u = 0
    for side in order:
        if side:
            below += 1
        else:
            u += below
    return u


def _d(order: Order, n_a: int, n_b: int) -> int:
    """D * n_a * n_b: the largest gap between the two empirical distributions."""
    i = j = d = 0
    for side in order:
        i, j = (i + 1, j) if side == 0 else (i, j + 1)
        d = max(d, abs(i * n_b - j * n_a))
    return d
