"""The verdict rule, outcome by outcome, on evidence built by hand: what unclassified and
GPU-idle time can and cannot change."""

import pytest

from jobs.parsers.readings import KernelStat, PathCounts, ProfileReading
from jobs.profiles.attribution import attribute, with_idle
from jobs.profiles.phases import PhaseRules
from jobs.statistics.headline import compare
from jobs.statistics.spans import Ratio, Span
from jobs.studies.moe_decode_gap.gap import Gap
from jobs.studies.moe_decode_gap.question import Question
from jobs.studies.moe_decode_gap.verdict import Evidence, decide

Q = Question(kind="moe-decode-gap", candidate="mlxcel", control="qwen3", families={"ds": "ds4"})
RULES = PhaseRules(default={"expert gather": ["gather_qmv", "GatherQMM"],
                            "fused moe": ["fused_moe"], "attention": ["sdpa"]})
GATHER_DECODE = PathCounts(decode_gather=430, prefill_gather=43)
# 30 tok/s vs 40 tok/s: the gap is 1e6/30 - 1e6/40 = 8333 µs per token; a token is 33333 µs.
# Four runs each: at 3 against 3 the rank test cannot say "different" (p >= 0.1).
SLOW, FAST = [29.0, 29.5, 30.5, 31.0], [39.0, 39.5, 40.5, 41.0]
GQ = "gather_qmv_kernel<x>"  # a gather-only kernel: its identity proves the path


def evidence(candidate: list[float], baseline: list[float], kernels: dict[str, float] | None,
             paths: PathCounts | None = GATHER_DECODE, timed: bool = True,
             wall_us: float | None = None) -> Evidence:
    c, b = Span.of(candidate), Span.of(baseline)
    assert c and b
    reading = ProfileReading(tool="nsys-delta" if timed else "metal-dot", tokens=[400, 200],
                             paths=paths, kernels=[
        KernelStat(name=n, launches_per_token=43, us_per_token=us if timed else None)
        for n, us in kernels.items()]) if kernels is not None else None
    a = attribute(reading, RULES) if reading else None
    if a and wall_us is not None:
        a = with_idle(a, wall_us, "mlxcel decode, unprofiled")
    return Evidence(commit="c", backend="cuda" if timed else "metal", model="ds", family="ds4",
                    candidate=c, baseline=b, ratio=Ratio.of(c, b), attribution=a, paths=paths,
                    profile_ref="prof-cell" if reading else None, bench_ref="c/cuda/ds",
                    gap=Gap(arm="mlxcel", comparison=compare("decode tok/s", candidate, baseline,
                                                             None), flagged=[], candidate=c,
                            baseline=b))


def test_dominant_when_share_and_size_both_hold() -> None:
    v = decide(evidence(SLOW, FAST, {GQ: 20000, "sdpa_x": 8000}), Q)
    assert v.outcome == "dominant" and v.settled_by == ["prof-cell", "c/cuda/ds"]
    assert "gather 20000.0 µs/token = 71.4% of 28000.0" in v.reason
    assert "[QWEN3_MOE_SPARSE] lines: 430 gather_qmm decode calls, none fused" in v.reason


def test_not_dominant_when_share_is_too_small_even_with_unclassified() -> None:
    v = decide(evidence(SLOW, FAST, {GQ: 6000, "sdpa_x": 20000, "misc": 1000}), Q)
    assert v.outcome == "not dominant"


def test_not_dominant_when_gather_is_too_small_for_the_gap() -> None:
    # 70 % of the kernels, but 2000 µs cannot explain half of an 8333 µs gap.
    v = decide(evidence(SLOW, FAST, {GQ: 2000, "sdpa_x": 800}), Q)
    assert v.outcome == "not dominant"


def test_unclassified_time_can_stop_dominant_but_never_make_it() -> None:
    open_ = decide(evidence(SLOW, FAST, {GQ: 9000, "sdpa_x": 2000, "misc": 9000}), Q)
    assert open_.outcome == "not settled" and "unclassified time decides it" in open_.reason
    assert open_.missing == ["phase rules covering the unclassified kernels of prof-cell"]
    # Had the unknown kernel been the gather it would be dominant; unclassified, it is not.
    named = decide(evidence(SLOW, FAST, {GQ: 18000, "sdpa_x": 2000}), Q)
    assert named.outcome == "dominant"


def test_a_gap_made_of_idle_time_is_not_the_gathers() -> None:
    """The same kernels as a dominant verdict would need, but against a gap the GPU spent
    idle: 3000 µs of gather cannot be half of the gap, and the reason says where it went."""
    v = decide(evidence(SLOW, FAST, {GQ: 3000, "sdpa_x": 1000},
                        wall_us=1e6 / 30), Q)
    assert v.outcome == "not dominant"
    assert "GPU idle 29333.3 µs/token of a 33333.3 µs token (88%)" in v.reason
    assert "may then be launch or host overhead rather than kernel time" in v.reason
    assert v.idle_us_per_token == pytest.approx(1e6 / 30 - 4000)


def test_idle_time_never_joins_the_gather_nor_the_share() -> None:
    kernels = {GQ: 20000, "sdpa_x": 8000}
    with_idle_row = decide(evidence(SLOW, FAST, kernels, wall_us=1e6 / 30), Q)
    without = decide(evidence(SLOW, FAST, kernels), Q)
    assert with_idle_row.outcome == without.outcome == "dominant"
    assert "no GPU-idle row" in without.reason and "GPU idle 5333.3" in with_idle_row.reason


def test_negative_idle_is_shown_as_it_is() -> None:
    v = decide(evidence(SLOW, FAST, {GQ: 30000, "sdpa_x": 8000},
                        wall_us=1e6 / 30), Q)
    assert "GPU idle -4666.7 µs/token" in v.reason and "profiling overhead" in v.reason
    assert v.idle_us_per_token == pytest.approx(1e6 / 30 - 38000)


def test_no_gap_when_ranges_overlap() -> None:
    v = decide(evidence([29.0, 35.0, 40.0], FAST, {GQ: 1}), Q)
    assert v.outcome == "no gap" and v.settled_by == ["c/cuda/ds"]


def test_fused_decode_is_not_the_gather() -> None:
    v = decide(evidence(SLOW, FAST, {GQ: 20000},
                        paths=PathCounts(decode_fused=430)), Q)
    assert v.outcome == "not dominant" and "0 gather_qmm and 430 fused" in v.reason
    by_kernels = decide(evidence(SLOW, FAST, {"fused_moe_kernel": 9000}, paths=None), Q)
    assert by_kernels.outcome == "not dominant"
    assert "decode launches the fused kernel (fused_moe_kernel)" in by_kernels.reason


def test_families_without_sparse_lines_go_by_their_kernels() -> None:
    v = decide(evidence(SLOW, FAST, {GQ: 20000, "sdpa_x": 8000},
                        paths=None), Q)
    assert v.outcome == "dominant"
    assert "decode launches gather_qmv_kernel, which only the gather launches" in v.reason
    unknown = decide(evidence(SLOW, FAST, {"sdpa_x": 8000}, paths=None), Q)
    assert unknown.outcome == "not settled"
    assert unknown.missing == ["evidence of the decode path for cuda / ds"]


def test_generic_kernels_in_the_gather_phase_prove_no_path() -> None:
    # copy_g_nd and arange land in the gather phase by name, and qmm_sm80 takes index pointers
    # in every launch: none of them says which path decode took.
    rules = PhaseRules(default={"expert gather": ["gather_qmv", "arange", "copy_g_nd",
                                                  "qmm_sm80"], "fused moe": ["fused_moe"]})
    kernels = {"void mlx::core::cu::copy_g_nd<float, float, int, 3>(...)": 9000.0,
               "void mlx::core::cu::arange<unsigned int, int, 4>(...)": 1000.0,
               "void mlx::core::cu::qmm_sm80_kernel<64, float, cute::tuple<cute::C<16>, "
               "cute::C<128>, cute::C<64> > >(float const*, unsigned int const*, "
               "unsigned int const*)": 9000.0}
    e = evidence(SLOW, FAST, kernels, paths=None)
    reading = ProfileReading(tool="nsys-delta", tokens=[400, 200], kernels=[
        KernelStat(name=n, launches_per_token=43, us_per_token=us) for n, us in kernels.items()])
    e = e.model_copy(update={"attribution": attribute(reading, rules)})
    v = decide(e, Q)
    assert v.outcome == "not settled" and "path not determined" in v.reason
    assert "takes the gather" not in v.reason


def test_metal_is_not_settled_trace_not_read_and_names_its_op_counts() -> None:
    v = decide(evidence(SLOW, FAST, {"GatherQMM": 0, "sdpa_x": 0}, paths=None, timed=False), Q)
    assert v.outcome == "not settled"
    assert v.reason.startswith("trace not read: one decode token has 86 ops, 43 of them expert "
                               "gather")
    assert "GatherQMM 43" in v.reason
    assert "per-kernel time on metal" in v.missing[0]


def test_an_empty_decode_window_is_not_settled_and_not_called_an_unread_trace() -> None:
    # The CUDA profile's long run was no slower than its short one: no kernel time is left.
    for kernels in ({}, {GQ: 0.0, "sdpa_x": 0.0}):
        v = decide(evidence(SLOW, FAST, kernels), Q)
        assert v.outcome == "not settled" and "trace not read" not in v.reason
        assert v.reason.startswith("the profile's decode window kept no kernel time")
        assert v.missing[0] == "a kernel profile for cuda / ds on an idle host"


def test_missing_measurements_are_listed() -> None:
    no_profile = decide(evidence(SLOW, FAST, None, paths=None), Q)
    assert no_profile.outcome == "not settled"
    assert no_profile.missing == ["kernel profile for cuda / ds"]
    gone = evidence(SLOW, FAST, None).model_copy(update={"candidate": None})
    assert decide(gone, Q).missing == ["decode rows of c/cuda/ds"]
