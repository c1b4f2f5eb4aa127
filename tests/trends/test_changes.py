"""Change points on series of known shape: the step at its index, a spike never a step."""

import random

from jobs.trends.changes import Thresholds, find_steps


def _noisy(levels: list[tuple[float, int]], seed: int, sd: float = 0.5) -> list[float]:
    rng = random.Random(seed)
    return [level + rng.gauss(0, sd) for level, count in levels for _ in range(count)]


def test_a_planted_step_is_found_at_its_point() -> None:
    values = _noisy([(100.0, 20), (90.0, 15)], seed=1)
    steps = [s for s in find_steps(values, Thresholds()) if s.kept]
    assert [s.index for s in steps] == [20]
    assert -0.11 < steps[0].change < -0.09


def test_every_step_is_listed_not_just_the_latest() -> None:
    values = _noisy([(100.0, 15), (90.0, 15), (95.0, 15)], seed=2)
    assert [s.index for s in find_steps(values, Thresholds()) if s.kept] == [15, 30]


def test_a_single_spike_is_never_a_step() -> None:
    values = _noisy([(100.0, 30)], seed=3)
    values[12] = 70.0
    steps = find_steps(values, Thresholds())
    assert [s for s in steps if s.kept] == []
    # Had the fit cut around it, the segment filter says why it was dropped.
    assert all("segment of 1 commit" in " ".join(s.dropped_by) for s in steps)


def test_a_step_within_the_noise_floor_is_listed_but_dropped() -> None:
    values = _noisy([(100.0, 20), (97.0, 20)], seed=4, sd=0.2)
    steps = find_steps(values, Thresholds(noise_floor=0.05))
    assert [s.index for s in steps] == [20]
    assert not steps[0].kept
    assert any("A/A floor" in why for why in steps[0].dropped_by)


def test_a_short_series_has_no_steps() -> None:
    assert find_steps([1.0, 2.0, 3.0], Thresholds()) == []


def test_a_commit_measured_many_times_is_one_place_not_a_segment() -> None:
    """One slow commit (fixed by the next) measured 4 times: as 4 points it made two steps
    with 4-point segments; as one commit it is a spike."""
    rng = random.Random(5)
    counts = {4: 4}
    commits = [f"c{i}" for i in range(9) for _ in range(counts.get(i, 1))]
    values = [(70.0 if c == "c4" else 100.0) + rng.gauss(0, 0.5) for c in commits]
    assert [s for s in find_steps(values, Thresholds(), commits) if s.kept] == []


def test_a_step_is_at_the_first_point_of_its_commit_and_counts_commits() -> None:
    rng = random.Random(6)
    commits = [f"c{i}" for i in range(10) for _ in range(2)]
    values = [(100.0 if int(c[1:]) < 6 else 80.0) + rng.gauss(0, 0.5) for c in commits]
    [step] = [s for s in find_steps(values, Thresholds(), commits) if s.kept]
    assert (step.index, step.segment_before, step.segment_after) == (12, 6, 4)
    assert commits[step.index] == "c6" and commits[step.index - 1] == "c5"


def test_a_spike_among_one_commits_runs_does_not_cost_the_step_its_segment() -> None:
    """The means of a CI run that lost its step: one run of commit d slowed by hogs (a cut
    inside d, the stronger) left the real step at f a 2-commit segment before it. The cut
    inside d goes first, and the step is judged on its whole segment."""
    values = [411.7, 472.9, 280.1, 461.7, 357.2, 441.6, 418.1, 408.5, 38.7, 374.8, 437.6,
              40.8, 43.8, 37.9, 38.6, 41.0, 39.5]
    runs = (2, 2, 2, 3, 2, 2, 2, 2)
    commits = [c for c, count in zip("abcdefgh", runs, strict=True) for _ in range(count)]
    steps = find_steps(values, Thresholds(), commits)
    [inside] = [s for s in steps if commits[s.index - 1] == commits[s.index]]
    assert not inside.kept and inside.pvalue < min(s.pvalue for s in steps if s.kept)
    [step] = [s for s in steps if s.kept]
    assert commits[step.index] == "f" and (step.segment_before, step.segment_after) == (5, 3)
