"""The gap a verdict and the control speak of: the headline answer on unflagged runs.

A verdict's words ("gap", "general", "family-specific") say no more than the comparison
behind them: ranges apart AND the rank test different AND beyond the A/A noise floor
(jobs/statistics/headline.py, DECISIONS.md "Headline rule"). Runs flagged for their host
(jobs/record/run_flags.py, jobs/record/fidelity.py) are left out; when what remains cannot
decide, the words say "host".
"""

from collections.abc import Sequence
from typing import Literal

from jobs.record.parts import Group, Measurement
from jobs.statistics.headline import Comparison, compare, noise_floor
from jobs.statistics.spans import Span
from jobs.strict import Strict

# Fewer unflagged runs than this per arm decide nothing (`check` asks n >= 3 of every arm).
MIN_RUNS = 3


class Gap(Strict):
    """An arm against the baseline on decode tok/s, on the runs no flag was raised on."""

    arm: str
    comparison: Comparison | None
    # Cells of the arm or the baseline left out for their flags.
    flagged: list[str]
    # decode tok/s of the unflagged runs: what the verdict's size test reads.
    candidate: Span | None = None
    baseline: Span | None = None

    @property
    def undecided_by_host(self) -> bool:
        """Flagged runs were left out, and what remains cannot answer."""
        c = self.comparison
        return bool(self.flagged) and (c is None or c.answer == "undecided"
                                       or min(c.n, c.n_baseline) < MIN_RUNS)


def decode_gap(g: Group, arm: str) -> Gap:
    base = next((r for r in g.rows if r.baseline), None)
    aa = next((r for r in g.rows if r.aa), None)
    if base is None:
        return Gap(arm=arm, comparison=None, flagged=[])
    ours = [m for m in g.measurements if m.arm in (arm, base.arm)]
    quiet = [m for m in g.measurements if not m.flags]
    floor = _floor(g) if aa and aa.arm != arm else None  # the A/A arm is the floor itself
    found = compare("decode tok/s", _values(quiet, arm), _values(quiet, base.arm), floor)
    return Gap(arm=arm, comparison=found, flagged=[m.cell_id for m in ours if m.flags],
               candidate=_span(quiet, arm), baseline=_span(quiet, base.arm))


def host_reason(gap: Gap) -> str:
    c = gap.comparison
    left = (f"at n = {c.n} against {c.n_baseline} unflagged runs {c.word}: {c.reason}"
            if c else "too few unflagged runs to compare")
    return (f"host: {len(gap.flagged)} runs were flagged for their host and left out "
            f"({_cells(gap.flagged)}); {left}")


def _cells(ids: Sequence[str], named: int = 6) -> str:
    more = f" and {len(ids) - named} more" if len(ids) > named else ""
    return ", ".join(ids[:named]) + more


def _values(ms: Sequence[Measurement], arm: str) -> list[float]:
    return [m.decode_tps for m in ms if m.arm == arm]


def _span(ms: Sequence[Measurement], arm: str) -> Span | None:
    return Span.of(_values(ms, arm))


Relation = Literal["family-specific", "general", "narrower", "no gap in either",
                   "no gap in the family", "not settled"]


def relation(family: Group, control: Group, arm: str) -> tuple[Relation, str]:
    """The family's gap against the control's, each by the headline rule, then the two
    ratios against each other by the same rule: never a word the comparisons do not give."""
    fam, ctl = decode_gap(family, arm), decode_gap(control, arm)
    for who, g in (("family", fam), ("control", ctl)):
        if g.undecided_by_host:
            return "not settled", f"the {who}'s {host_reason(g)}"
        if g.comparison is None or g.comparison.answer == "undecided":
            why = g.comparison.reason if g.comparison else "no decode rows to compare"
            return "not settled", f"more repeats: the {who}'s gap is undecided ({why})"
    assert fam.comparison and ctl.comparison
    fam_gap, ctl_gap = _slower(fam.comparison), _slower(ctl.comparison)
    if not fam_gap and not ctl_gap:
        return "no gap in either", "neither the family nor the control is slower than the " \
            f"baseline (family: {fam.comparison.reason}; control: {ctl.comparison.reason})"
    if not fam_gap:
        return "no gap in the family", f"the control is slower, the family not " \
            f"({fam.comparison.reason})"
    if not ctl_gap:
        return "family-specific", f"the family is slower, the control not " \
            f"({ctl.comparison.reason})"
    return _ratios(family, control, arm)


def _ratios(family: Group, control: Group, arm: str) -> tuple[Relation, str]:
    """Both are slower: each run's ratio to its own baseline's unflagged mean, family's
    against control's, with the larger A/A floor of the two groups."""
    fam, ctl = _run_ratios(family, arm), _run_ratios(control, arm)
    floors = [f for f in (_floor(family), _floor(control)) if f is not None]
    c = compare("decode ratio", fam, ctl, max(floors) if floors else None)
    if c is None:
        return "not settled", "no ratios to compare"
    if c.answer == "undecided":
        return "not settled", ("more repeats: the ratios' difference is undecided "
                               f"({c.reason})")
    if c.answer == "overlap":
        return "general", f"both are slower and their ratios do not differ ({c.reason})"
    word: Relation = "family-specific" if c.ratio.mean < 1 else "narrower"
    return word, f"both are slower and the family's ratio differs from the control's " \
        f"({c.reason})"


def _slower(c: Comparison) -> bool:
    return c.answer == "differs" and c.ratio.mean < 1


def _run_ratios(g: Group, arm: str) -> list[float]:
    base = next((r for r in g.rows if r.baseline), None)
    quiet = [m for m in g.measurements if not m.flags]
    ref = _span(quiet, base.arm) if base else None
    return [v / ref.mean for v in _values(quiet, arm)] if ref and ref.mean > 0 else []


def _floor(g: Group) -> float | None:
    base = next((r for r in g.rows if r.baseline), None)
    aa = next((r for r in g.rows if r.aa), None)
    quiet = [m for m in g.measurements if not m.flags]
    return noise_floor(_span(quiet, aa.arm), _span(quiet, base.arm)) if aa and base else None
