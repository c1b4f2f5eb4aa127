"""Change points on series of known shape: the step at its index, a spike never a step."""

import random

from jobs.trends.changes import Thresholds, arranged, find_steps


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
    """The means of two runs of test_history_real that lost their step, each with one run of
    commit d slowed by hogs, the last of d's runs, beside the step at f. In the first (CI) the
    fit cut inside d (the stronger cut) and left the step a 2-commit segment; in the second (a
    quiet host: the spike 12 to 13x slower, the step 8x) Otava found the spike's cut alone.
    A commit's runs are placed with the outlier in its middle, away from its neighbours."""
    runs = (2, 2, 2, 3, 2, 2, 2, 2)
    commits = [c for c, count in zip("abcdefgh", runs, strict=True) for _ in range(count)]
    for values in ([411.7, 472.9, 280.1, 461.7, 357.2, 441.6, 418.1, 408.5, 38.7, 374.8, 437.6,
                    40.8, 43.8, 37.9, 38.6, 41.0, 39.5],
                   [654.3, 638.1, 647.1, 658.4, 650.0, 649.3, 625.7, 662.1, 50.1, 654.9, 680.5,
                    79.6, 77.3, 76.2, 78.0, 77.1, 76.8]):
        assert arranged(values, commits)[7] == values[8]  # the spike, in the middle of d
        [step] = [s for s in find_steps(values, Thresholds(), commits) if s.kept]
        assert commits[step.index] == "f" and (step.segment_before, step.segment_after) == (5, 3)


def test_a_cut_inside_a_commit_goes_first() -> None:
    """Two of d's five runs slowed: in its middle they still cut it twice. Those cuts are
    dropped before the step's own segments are judged, so the step at f keeps all of them
    (dropped weakest first, the stronger inside cut would leave the step a 1-commit segment)."""
    values = [415.8, 457.0, 432.3, 416.9, 496.7, 393.8, 36.4, 421.9, 37.9, 436.9, 419.8, 398.3,
              325.5, 43.7, 40.7, 37.5, 42.0, 41.7, 44.3]
    runs = (2, 2, 2, 5, 2, 2, 2, 2)
    commits = [c for c, count in zip("abcdefgh", runs, strict=True) for _ in range(count)]
    steps = find_steps(values, Thresholds(), commits)
    inside = [s for s in steps if commits[s.index - 1] == commits[s.index]]
    assert inside and not any(s.kept for s in inside)
    [step] = [s for s in steps if s.kept]
    assert commits[step.index] == "f" and (step.segment_before, step.segment_after) == (5, 3)
