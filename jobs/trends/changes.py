"""Steps in a series: E-divisive means with a significance test (Apache Otava's
implementation), then filters in the manner of Chromium's perf dashboard. Every step is listed,
kept or not, with the filter that dropped it, so a reader sees why nothing alerted.

Only the points a fit may use are given here (flagged runs are left out by the caller). A
commit measured several times (two sweeps, a confirmation's repeats) is one place on the x
axis: a step falls between two commits, and a segment is as long as the commits it spans, so a
slow commit measured four times is a spike, not a four-point segment.
"""

from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter
from statistics import fmean, median, pstdev

from otava.analysis import compute_change_points

from jobs.strict import Strict

# Otava's defaults for a series of benchmark means; a window this wide sees a step whole.
MAX_PVALUE = 0.01
WINDOW = 50
WITHIN_A_COMMIT = "it falls between two runs of one commit"


class Thresholds(Strict):
    """What a step must clear to be a candidate; one set per testbed."""

    max_pvalue: float = MAX_PVALUE
    window: int = WINDOW
    # Points on each side: a single spike makes segments of one and is never a step.
    min_segment: int = 3
    # |after - before| / before.
    min_change: float = 0.02
    # |after - before| over the pooled spread of the points either side.
    noise_multiple: float = 2.0
    # How much of the spread either side the step explains (1 - SSE_step / SSE_flat).
    min_steppiness: float = 0.5
    # The A/A noise floor (relative) measured on this testbed, when one was.
    noise_floor: float | None = None


class Step(Strict):
    index: int  # the first point after the step (a step inside a commit: as `arranged`)
    before: float
    after: float
    change: float  # relative, signed: negative is slower (every metric is higher-better)
    pvalue: float
    spread: float
    multiple: float
    steppiness: float
    segment_before: int  # commits on that side (each value its own, when none are named)
    segment_after: int
    kept: bool
    dropped_by: list[str]


def find_steps(values: Sequence[float], thresholds: Thresholds,
               commits: Sequence[str] | None = None) -> list[Step]:
    """Every change point the fit found, kept or dropped. `commits` names each value's commit
    (the values of one commit adjacent); without it each value is a commit of its own. A
    dropped change point is taken out before the rest are judged again (weakest first, as
    Otava's merge does), so an outlier's cut next to a real step does not leave the step a
    one-point segment."""
    at = list(commits) if commits is not None else [str(i) for i in range(len(values))]
    points = arranged([float(v) for v in values], at)
    if len(set(at)) < 2 * thresholds.min_segment:
        return []
    found, _ = compute_change_points(points, window_len=thresholds.window,
                                     max_pvalue=thresholds.max_pvalue)
    pvalues = {int(c.index): float(c.stats.pvalue) for c in found}
    cuts, dropped = sorted(pvalues), list[Step]()
    while True:
        judged = _judged(points, at, cuts, pvalues, thresholds)
        failing = [s for s in judged if not s.kept]
        if not failing:
            return sorted([*judged, *dropped], key=lambda s: s.index)
        weakest = first_to_drop(failing)
        dropped.append(weakest)
        cuts.remove(weakest.index)


def arranged(points: list[float], commits: list[str]) -> list[float]:
    """Each commit's points (one a sweep's mean for it) with the two nearest its median at its
    edges and the farthest in its middle. A commit is one place, so the order of its points
    means nothing to a step; but a point from a run slowed by something else, at the edge
    beside the next commit, reads to the fit as that step's edge: a quiet run's spike, its
    commit's last point, hid the planted step after it (Otava found the spike's cut alone).
    In the middle it is a cut inside the commit. With two points there is no middle: both
    are as near the median, and they stay as given."""
    out: list[float] = []
    for _, group in groupby(zip(commits, points, strict=True), key=itemgetter(0)):
        runs = [v for _, v in group]
        mid = median(runs)
        slots = [i // 2 if i % 2 == 0 else len(runs) - 1 - i // 2
                 for i in range(len(runs))]  # outside in: first, last, second, ...
        placed = [0.0] * len(runs)
        for slot, v in zip(slots, sorted(runs, key=lambda v: abs(v - mid)), strict=True):
            placed[slot] = v
        out += placed
    return out


def first_to_drop(failing: list[Step]) -> Step:
    """A cut between two runs of one commit is never a step, whatever its neighbours: it goes
    first, so that a spike among one commit's runs cannot cut a real step's segment short and
    have the step dropped before it. Then the weakest (Otava's merge order)."""
    inside = [s for s in failing if WITHIN_A_COMMIT in s.dropped_by]
    return max(inside or failing, key=lambda s: (s.pvalue, -abs(s.change)))


def _judged(points: list[float], commits: list[str], cuts: list[int],
            pvalues: dict[int, float], t: Thresholds) -> list[Step]:
    edges = [0, *cuts, len(points)]
    return [_step(points, commits, edges[i - 1], edges[i], edges[i + 1], pvalues[edges[i]], t)
            for i in range(1, len(edges) - 1)]


def _step(points: list[float], commits: list[str], start: int, cut: int, end: int,
          pvalue: float, t: Thresholds) -> Step:
    before, after = points[start:cut], points[cut:end]
    mean_b, mean_a = fmean(before), fmean(after)
    spread = (pstdev(before) * len(before) + pstdev(after) * len(after)) / (end - start)
    flat = sum((v - fmean(before + after)) ** 2 for v in before + after)
    split = sum((v - mean_b) ** 2 for v in before) + sum((v - mean_a) ** 2 for v in after)
    change = (mean_a - mean_b) / mean_b if mean_b else 0.0
    multiple = abs(mean_a - mean_b) / spread if spread else float("inf")
    steppiness = 1 - split / flat if flat else 0.0
    n_before, n_after = len(set(commits[start:cut])), len(set(commits[cut:end]))
    dropped = _dropped_by(n_before, n_after, change, multiple, steppiness, t)
    if commits[cut - 1] == commits[cut]:
        dropped.insert(0, WITHIN_A_COMMIT)
    return Step(index=cut, before=mean_b, after=mean_a, change=change, pvalue=pvalue,
                spread=spread, multiple=multiple, steppiness=steppiness,
                segment_before=n_before, segment_after=n_after, kept=not dropped,
                dropped_by=dropped)


def _dropped_by(n_before: int, n_after: int, change: float, multiple: float,
                steppiness: float, t: Thresholds) -> list[str]:
    why = []
    if min(n_before, n_after) < t.min_segment:
        why.append(f"segment of {min(n_before, n_after)} commit(s) < {t.min_segment}")
    if abs(change) < t.min_change:
        why.append(f"change {change:+.1%} under {t.min_change:.0%}")
    if t.noise_floor is not None and abs(change) <= t.noise_floor:
        why.append(f"change {change:+.1%} within the A/A floor {t.noise_floor:.1%}")
    if multiple < t.noise_multiple:
        why.append(f"{multiple:.1f}x the spread < {t.noise_multiple:g}x")
    if steppiness < t.min_steppiness:
        why.append(f"steppiness {steppiness:.2f} < {t.min_steppiness:g}")
    return why
