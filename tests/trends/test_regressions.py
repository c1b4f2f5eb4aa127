"""Candidates from a series' steps, the headline rule on a confirmation, and the tally."""

import random

from jobs.trends.changes import Thresholds
from jobs.trends.regressions import Verdict, judge, listed, round_floor, tally
from jobs.trends.timeline import SeriesPoint, candidates, with_steps


def _point(i: int, mean: float, flags: list[str] | None = None,
           position: int | None = None) -> SeriesPoint:
    return SeriesPoint(commit=f"c{i:02d}", position=i if position is None else position,
                       sweep_id=f"s{i}", created="", n=3, mean=mean, min=mean - 1,
                       max=mean + 1, flags=flags or [], check_ok=True, mlx_pin=None,
                       used=not flags and (position is None or position >= 0))


def _series(flagged_at: int | None = None) -> list[SeriesPoint]:
    rng = random.Random(5)
    points = [_point(i, (100.0 if i < 12 else 80.0) + rng.gauss(0, 0.5)) for i in range(24)]
    if flagged_at is not None:  # a busy run that would have made a second step
        points[flagged_at] = _point(flagged_at, 40.0, ["host not idle"])
    return points


def test_a_slower_step_is_a_candidate_at_its_commits() -> None:
    s = with_steps(("bed", "m", "fused", "decode_tps"), _series(), Thresholds())
    [c] = candidates(s)
    assert (c.commit, c.before, c.commits_spanned, c.sweep) == ("c12", "c11", 1, "s12")
    assert candidates(s, since=12) == []  # --since the step's own commit


def test_a_flagged_point_is_shown_but_not_fit() -> None:
    s = with_steps(("bed", "m", "fused", "decode_tps"), _series(flagged_at=18), Thresholds())
    assert len(s.points) == 24 and not s.points[18].used
    assert [c.commit for c in candidates(s)] == ["c12"]


def test_a_step_across_a_gap_spans_its_commits() -> None:
    points = [p.model_copy(update={"position": i + (3 if i >= 12 else 0)})
              for i, p in enumerate(_series())]
    [c] = candidates(with_steps(("b", "m", "a", "decode_tps"), points, Thresholds()))
    assert c.commits_spanned == 4


def test_the_headline_rule_judges_a_confirmation() -> None:
    before, after = [100.0, 101.0, 99.5, 100.4], [80.0, 81.0, 79.2, 80.5]
    aa = [round_floor(before, [100.2, 100.9, 99.8, 100.1]) or 0.0]
    state, c, why = judge("decode_tps", before, after, aa, capped=False, both_orders=True)
    assert state == "confirmed" and c is not None and c.answer == "differs"
    assert why.startswith("slower after the step: ")
    # The same numbers from one round: its commits ran one block after the other, so a drift
    # in the host's load could make them; the round in the other order decides.
    state, _, why = judge("decode_tps", before, after, aa, capped=False, both_orders=False)
    assert state is None and why.endswith("the other order is still to run")
    state, _, why = judge("decode_tps", after, before, aa, capped=False, both_orders=False)
    assert state is None
    state, _, why = judge("decode_tps", before, [100.1, 99.0, 101.2, 100.0], aa,
                          capped=False, both_orders=False)  # overlap: a drift may hide a step
    assert state is None and why.endswith("the other order is still to run")
    state, _, why = judge("decode_tps", before, [100.1, 99.0, 101.2, 100.0], aa,
                          capped=False, both_orders=True)
    assert state == "not confirmed" and why == "not significant: the ranges overlap"
    # Apart, but 3 against 3 cannot reach α: more rounds, until the cap says "not settled".
    state, _, why = judge("decode_tps", before[:3], after[:3], aa, capped=False,
                          both_orders=True)
    assert state is None and why.startswith("not yet known: the ranges are apart")
    state, _, why = judge("decode_tps", before[:3], after[:3], aa, capped=True,
                          both_orders=True)
    assert state == "not settled" and why.endswith("the repeat cap stopped it")
    # A change within the median round's A/A floor is undecided (not significant), whatever
    # the ranges: more rounds.
    state, _, why = judge("decode_tps", before, after, [0.1, 0.5, 0.4], capped=False,
                          both_orders=True)
    assert state is None and why.startswith("not significant: ") and "A/A noise floor" in why


def test_a_verdict_is_remembered_and_tallied() -> None:
    s = with_steps(("bed", "m", "fused", "decode_tps"), _series(), Thresholds())
    [c] = candidates(s)
    refuted = Verdict(key=c.key, state="not confirmed",
                      reason="not significant: the ranges overlap", comparison=None, sweeps=["x"])
    rows = listed([c], {c.key: refuted})
    assert rows[0].state == "not confirmed"
    assert tally(rows) == {"bed": {"candidate": 0, "confirmed": 0, "not confirmed": 1,
                                   "not settled": 0}}
