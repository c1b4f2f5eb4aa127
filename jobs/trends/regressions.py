"""Regression candidates from the steps of every series, what confirmation said of each, and
the tally per testbed that is the false-alarm rate users ask every such tool for."""

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from statistics import median
from typing import Literal

from jobs.statistics.headline import Comparison, compare, noise_floor
from jobs.statistics.spans import Span
from jobs.strict import Strict
from jobs.trends.changes import Step

State = Literal["candidate", "confirmed", "not confirmed", "not settled"]


class Candidate(Strict):
    testbed: str
    model: str
    arm: str
    metric: str
    commit: str  # the first commit after the step
    before: str  # the last commit before it
    # Commits on the first-parent line from `before` (excluded) to `commit` (included).
    commits_spanned: int
    sweep: str  # the sweep that measured `commit`, whose recipe confirmation runs again
    step: Step

    @property
    def key(self) -> str:
        """What a verdict is remembered under: the series and the step's two commits."""
        text = "\0".join((self.testbed, self.model, self.arm, self.metric, self.before,
                          self.commit))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class Verdict(Strict):
    key: str
    state: State
    reason: str
    comparison: Comparison | None
    sweeps: list[str]
    bisect: str | None = None  # the bisect record written beside a confirmed step


class Listed(Strict):
    candidate: Candidate
    state: State
    verdict: Verdict | None


def listed(candidates: Iterable[Candidate], verdicts: Mapping[str, Verdict]) -> list[Listed]:
    rows = []
    for c in candidates:
        v = verdicts.get(c.key)
        rows.append(Listed(candidate=c, state=v.state if v else "candidate", verdict=v))
    return rows


def tally(rows: Iterable[Listed]) -> dict[str, dict[str, int]]:
    """Per testbed, how many candidates each state has."""
    counts: dict[str, dict[str, int]] = {}
    for r in rows:
        bed = counts.setdefault(r.candidate.testbed, {"candidate": 0, "confirmed": 0,
                                                      "not confirmed": 0, "not settled": 0})
        bed[r.state] += 1
    return counts


def judge(metric: str, before: Sequence[float], after: Sequence[float],
          floors: Sequence[float], capped: bool, both_orders: bool
          ) -> tuple[State | None, Comparison | None, str]:
    """The record's headline rule on the commit after the step against the one before (the
    baseline). The A/A floor is the before commit's, one per round, and their median: one
    noisy round neither silences nor loosens the answer. None while more repeats may decide.

    Nothing is decided before both commits have run first (`both_orders`), unless the cap
    stops it: a round runs one commit's repeats, then the other's, so a drift in the host's
    load between the two blocks reads as a step, or hides one, and that round's own A/A arm,
    inside one block, cannot see it."""
    c = compare(metric, after, before, median(floors) if floors else None)
    if c is None:
        return "not settled", None, "a commit has no measurement to compare"
    # Every reason starts with the comparison's word, as the record and `compare` print it.
    if not both_orders and not capped:
        return None, c, f"{c.word}: {c.reason}; the other order is still to run"
    if c.answer == "differs" and c.ratio.mean < 1:
        return "confirmed", c, f"{c.word} after the step: {c.reason}"
    if c.answer == "differs":
        return "not confirmed", c, f"{c.word} after the step, not slower: {c.reason}"
    if c.answer == "overlap":
        return "not confirmed", c, f"{c.word}: {c.reason}"
    if capped:
        return "not settled", c, f"{c.word}: {c.reason}; the repeat cap stopped it"
    return None, c, f"{c.word}: {c.reason}"


def round_floor(base: Sequence[float], aa: Sequence[float]) -> float | None:
    """One round's A/A floor at the before commit, as a record's comparisons compute it."""
    return noise_floor(Span.of(aa), Span.of(base))
