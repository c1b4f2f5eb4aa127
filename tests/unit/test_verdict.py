"""The verdict rule, outcome by outcome, on evidence built by hand."""

from jobs.attribution import attribute
from jobs.readings import KernelStat, PathCounts, ProfileReading
from jobs.stats import Ratio, Span
from jobs.sweep import Question
from jobs.verdict import Evidence, decide

Q = Question(kind="moe-decode-gap", candidate="mlxcel", control="qwen3", families={"ds": "ds4"})
RULES = {"expert gather": ["gather_qmv"], "attention": ["sdpa"]}
GATHER_DECODE = PathCounts(decode_gather=430, prefill_gather=43)


def evidence(candidate: list[float], baseline: list[float], kernels: dict[str, float] | None,
             paths: PathCounts | None = GATHER_DECODE, timed: bool = True) -> Evidence:
    c, b = Span.of(candidate), Span.of(baseline)
    assert c and b
    reading = ProfileReading(tool="nsys-delta", tokens=[400, 200], kernels=[
        KernelStat(name=n, launches_per_token=43, us_per_token=us if timed else None)
        for n, us in kernels.items()]) if kernels is not None else None
    return Evidence(commit="c", backend="cuda", model="ds", family="ds4", candidate=c,
                    baseline=b, ratio=Ratio.of(c, b),
                    attribution=attribute(reading, RULES) if reading else None, paths=paths,
                    profile_ref="prof-cell" if reading else None, bench_ref="c/cuda/ds")


# 30 tok/s vs 40 tok/s: the gap is 1e6/30 - 1e6/40 = 8333 µs per token.
SLOW, FAST = [29.0, 30.0, 31.0], [39.0, 40.0, 41.0]


def test_dominant_when_share_and_size_both_hold() -> None:
    v = decide(evidence(SLOW, FAST, {"gather_qmv_x": 20000, "sdpa_x": 8000}), Q)
    assert v.outcome == "dominant" and v.settled_by == ["prof-cell", "c/cuda/ds"]
    assert "gather 20000.0 µs/token = 71.4% of 28000.0" in v.reason


def test_not_dominant_when_share_is_too_small_even_with_unclassified() -> None:
    v = decide(evidence(SLOW, FAST, {"gather_qmv_x": 6000, "sdpa_x": 20000, "misc": 1000}), Q)
    assert v.outcome == "not dominant"


def test_not_dominant_when_gather_is_too_small_for_the_gap() -> None:
    # 70 % of a short token, but 2000 µs cannot explain half of an 8333 µs gap.
    v = decide(evidence(SLOW, FAST, {"gather_qmv_x": 2000, "sdpa_x": 800}), Q)
    assert v.outcome == "not dominant"


def test_unclassified_time_that_could_flip_it_leaves_it_open() -> None:
    v = decide(evidence(SLOW, FAST, {"gather_qmv_x": 9000, "sdpa_x": 2000, "misc": 9000}), Q)
    assert v.outcome == "not settled" and "unclassified time decides it" in v.reason
    assert v.missing == ["phase rules covering the unclassified kernels of prof-cell"]


def test_no_gap_when_ranges_overlap() -> None:
    v = decide(evidence([29.0, 35.0, 40.0], FAST, {"gather_qmv_x": 1}), Q)
    assert v.outcome == "no gap" and v.settled_by == ["c/cuda/ds"]


def test_fused_decode_is_not_the_gather() -> None:
    v = decide(evidence(SLOW, FAST, {"gather_qmv_x": 20000},
                        paths=PathCounts(decode_fused=430)), Q)
    assert v.outcome == "not dominant" and "0 gather_qmm and 430 fused" in v.reason


def test_missing_measurements_are_listed() -> None:
    no_profile = decide(evidence(SLOW, FAST, None, paths=None), Q)
    assert no_profile.outcome == "not settled"
    assert no_profile.missing[0] == "kernel profile for cuda / ds"
    untimed = decide(evidence(SLOW, FAST, {"gather_qmv_x": 1}, timed=False), Q)
    assert untimed.outcome == "not settled" and "per-kernel time on cuda" in untimed.missing[0]
