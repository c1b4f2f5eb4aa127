"""`check` refuses a whole-token split its own numbers contradict."""

import pytest

from jobs.parsers.readings import KernelStat, ProfileReading
from jobs.parsers.timeline import (
    DecodeTimeline,
    Interval,
    run_timeline,
    timeline_flags,
    token_split,
)
from jobs.profiles.attribution import attribute
from jobs.profiles.phases import PhaseRules
from jobs.record.check_split import split_problems

RULES = PhaseRules(default={"expert gather": ["gather_qmv"], "attention": ["sdpa"]})


def timeline(wall_us: float | None) -> DecodeTimeline:
    # Per token (1 token apart): gather 30 µs and sdpa 20 µs, sdpa beside gather for 10 µs.
    def run(n: int) -> list[Interval]:
        return [i for t in range(n) for i in (
            Interval(start_ns=100_000 * t, duration_ns=30_000, stream="1", name="gather_qmv_k"),
            Interval(start_ns=100_000 * t + 20_000, duration_ns=20_000, stream="2",
                     name="sdpa_k"))]
    split = token_split(run_timeline(run(3)), run_timeline(run(2)), 1)
    return DecodeTimeline(short_tokens=2, long_tokens=3, split=split, profiled_wall_us=wall_us)


def reading(wall_us: float | None) -> ProfileReading:
    return ProfileReading(tool="nsys-delta", tokens=[3, 2], timeline=timeline(wall_us), kernels=[
        KernelStat(name="gather_qmv_k", launches_per_token=1, us_per_token=30.0),
        KernelStat(name="sdpa_k", launches_per_token=1, us_per_token=20.0)])


def test_a_consistent_split_passes_and_its_shares_stay_within_100_percent() -> None:
    a = attribute(reading(100.0), RULES)
    assert a.timeline and a.timeline.split.busy_us == pytest.approx(40.0)
    gather = a.phase("expert gather")
    assert gather and gather.busy_us_per_token == pytest.approx(25.0)  # 20 alone + 10 / 2
    assert gather.busy_share == pytest.approx(25 / 40) and gather.wall_share == pytest.approx(0.25)
    assert a.timeline.idle_us == pytest.approx(60.0)
    assert split_problems("w", a) == []


def test_a_split_its_own_numbers_contradict_is_flagged_and_shows_no_wall_share() -> None:
    # As on the H200: busy per token (a difference of two single runs) over the profiled wall.
    t = timeline(35.0)
    flagged = t.model_copy(update={"flags": timeline_flags(t.split, 35.0, None)})
    assert flagged.flags and "exceeds the profiled wall 35.0" in flagged.flags[0]
    r = reading(35.0)
    a = attribute(r.model_copy(update={"timeline": flagged}), RULES)
    assert all(p.wall_share is None for p in a.phases) and not a.timeline.wall_usable
    assert split_problems("w", a) == []
    hidden = a.model_copy(update={"timeline": flagged.model_copy(update={"flags": []})})
    assert any("its own numbers give" in p for p in split_problems("w", hidden))


def test_profiled_runs_faster_than_unprofiled_ones_are_flagged() -> None:
    t = timeline(100.0)
    assert timeline_flags(t.split, 100.0, 140.0)[0].startswith(
        "the profiled runs were faster than the unprofiled ones at the same token counts (0.71x)")
    assert timeline_flags(t.split, 100.0, 80.0) == []


def test_busy_beyond_the_profiled_wall_is_flagged_never_shown_as_idle() -> None:
    a = attribute(reading(35.0), RULES)
    assert a.timeline and a.timeline.flags and "exceeds the profiled wall 35.0" in \
        a.timeline.flags[0]
    assert all(p.wall_share is None for p in a.phases)
    assert not any("over 100%" in p for p in split_problems("w", a))  # 25/35: no share over
    given = [p.model_copy(update={"wall_share": 0.7}) for p in a.phases]
    assert any("a flagged split gives phases a share of the wall" in p
               for p in split_problems("w", a.model_copy(update={"phases": given})))


@pytest.mark.parametrize("field, value, words", [
    ("busy_share", 1.2, "of the busy time, over 100%"),
    ("wall_share", 1.5, "of the profiled wall, over 100%"),
    ("share", 2.4, "of the kernel time, over 100%"),
])
def test_a_share_over_100_percent_fails(field: str, value: float, words: str) -> None:
    a = attribute(reading(100.0), RULES)
    phases = [p.model_copy(update={field: value}) if p.phase == "attention" else p
              for p in a.phases]
    assert any(words in p for p in split_problems("w", a.model_copy(update={"phases": phases})))


def test_tampered_busy_and_shares_without_a_trace_fail() -> None:
    a = attribute(reading(100.0), RULES)
    assert a.timeline
    bigger = a.timeline.split.model_copy(update={"busy_us": 60.0, "overlap_us": -10.0})
    tampered = a.model_copy(update={"timeline": a.timeline.model_copy(update={"split": bigger})})
    problems = split_problems("w", tampered)
    assert any("exceeds the kernel sum" in p for p in problems)
    no_trace = a.model_copy(update={"timeline": None})
    assert any("without a kernel trace" in p for p in split_problems("w", no_trace))
    moved = [p.model_copy(update={"busy_us_per_token": 99.0}) for p in a.phases]
    assert any("the phases hold" in p
               for p in split_problems("w", a.model_copy(update={"phases": moved})))
