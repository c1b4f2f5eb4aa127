"""The real H200 captures committed under docs/records/h200-moe-decode/attempt-1/ (CUPTI kernel
sums of the Qwen3-like model at 96 and 32 generated tokens, MLX 0.32.4, fused decode), read
straight from the raw-artifacts tarball as the worker stored them: nobody here shaped them."""

import re
import tarfile
from pathlib import Path

import pytest

from jobs.parsers import nsys_delta
from jobs.parsers.readings import KernelStat, PathCounts, ProfileInput, ProfileReading, RunOutput
from jobs.profiles.attribution import UNCLASSIFIED, Attribution, attribute
from jobs.profiles.kernel_shape import tile_m
from jobs.profiles.phases import PhaseRules
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.statistics.headline import compare
from jobs.statistics.spans import Ratio, Span
from jobs.studies.moe_decode_gap.gap import Gap
from jobs.studies.moe_decode_gap.path_evidence import decode_path
from jobs.studies.moe_decode_gap.question import Question
from jobs.studies.moe_decode_gap.verdict import Evidence, decide
from runner.presets import render

TARBALL = (Path(__file__).parents[3] / "docs/records/h200-moe-decode/attempt-1"
           / "raw-artifacts.tar.gz")
CELLS = ("9a7463ff9ce4-cuda-qwen3-30b-a3b-4bit-profile-r1-2957464b99",
         "f8f27ee79b50-cuda-qwen3-30b-a3b-4bit-profile-r1-1e84e7310d")
_LINES = re.compile(r"^\[QWEN3_MOE_SPARSE\].*\n", re.M)


def capture(cell: str, detail_lines: bool = True) -> ProfileInput:
    base = f"artifacts/h200-moe-decode-20261201-103800-0f55/{cell}/attempt-1/"
    with tarfile.open(TARBALL) as tar:
        def text(name: str) -> str:
            member = tar.extractfile(base + name)
            assert member is not None
            return member.read().decode()

        steps = {s: RunOutput(stdout=text(f"profile-{s}.stdout.txt"),
                              stderr=text(f"profile-{s}.stderr.txt"), exit_code=0)
                 for s in ("long", "short")}
        files = {f: text(f"out/{f}") for f in ("long.csv", "short.csv")}
    if not detail_lines:
        steps = {s: o.model_copy(update={"stderr": _LINES.sub("", o.stderr)})
                 for s, o in steps.items()}
    return ProfileInput(steps=steps, files=files)


def preset_rules() -> PhaseRules:
    return load(Sweep, render("moe-decode-gap", "abc", "/srv/mlxcel"), "preset.yaml")[0].phases


def reading(cell: str, detail_lines: bool) -> ProfileReading:
    parsed = nsys_delta.parse_cupti(capture(cell, detail_lines))
    assert isinstance(parsed, ProfileReading)
    return parsed


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("detail_lines", [True, False])
def test_real_capture_leaves_under_ten_percent_unclassified(cell: str, detail_lines: bool
                                                            ) -> None:
    r = reading(cell, detail_lines)
    assert (r.paths is not None) == detail_lines
    a = attribute(r, preset_rules(), "qwen3_moe")
    unclassified = a.phase(UNCLASSIFIED)
    assert unclassified is not None and unclassified.share is not None
    assert unclassified.share < 0.10, [k.name[:60] for k in a.kernels if k.phase == UNCLASSIFIED]
    # The decode token's biggest kernels are placed: the quantized matmuls (the fused path's
    # routed experts among them) and the KV cache's dynamic offsets.
    top = max(a.kernels, key=lambda k: k.us_per_token or 0.0)
    assert top.phase != UNCLASSIFIED


@pytest.mark.parametrize("cell", CELLS)
def test_fused_capture_is_never_read_as_taking_the_gather(cell: str) -> None:
    rules = preset_rules()
    with_lines, without = (attribute(reading(cell, d), rules, "qwen3_moe") for d in (True, False))
    # The generic copy kernels that land in the gather phase by name run at decode here...
    gather = without.phase("expert gather")
    assert gather is not None and gather.launches_per_token > 0
    # ...and prove nothing: without the lines the path is not determined.
    assert decode_path("cuda", without.kernels, None).path is None
    assert decode_path("cuda", with_lines.kernels, reading(cell, True).paths).path == "fused"
    slow_gap = verdict(without, None)
    assert slow_gap.outcome == "not settled" and "path not determined" in slow_gap.reason
    assert "takes the gather" not in slow_gap.reason
    fused = verdict(with_lines, reading(cell, True).paths)
    assert fused.outcome == "not dominant" and "232 fused decode calls" in fused.reason


def verdict(a: Attribution, paths: PathCounts | None):  # type: ignore[no-untyped-def]
    """The rule applied to the real attribution under a gap (the spans are the only made-up
    part: the real control ran faster than its baseline, so the path test would not be
    reached)."""
    slow_runs, fast_runs = [500.0, 505.0, 515.0, 520.0], [700.0, 705.0, 715.0, 720.0]
    slow, fast = Span.of(slow_runs), Span.of(fast_runs)
    assert slow and fast
    gap = Gap(arm="mlxcel", comparison=compare("decode tok/s", slow_runs, fast_runs, None),
              flagged=[], candidate=slow, baseline=fast)
    q = Question(kind="moe-decode-gap", candidate="mlxcel", control="qwen3",
                 families={"qwen3-30b-a3b-4bit": "qwen3_moe"})
    return decide(Evidence(commit="c", backend="cuda", model="qwen3-30b-a3b-4bit",
                           family="qwen3_moe", candidate=slow, baseline=fast,
                           ratio=Ratio.of(slow, fast), attribution=a, paths=paths,
                           profile_ref="prof", bench_ref="c/cuda/qwen3", gap=gap), q)


def test_real_qmm_sm80_names_carry_their_tile_and_only_decode_shapes_join_the_experts() -> None:
    r = reading(CELLS[0], True)
    # In this fused capture qmm_sm80 ran only in prefill: the same launches in both runs.
    names = [n for n in nsys_delta.kernel_table(capture(CELLS[0]).files["long.csv"])
             if "qmm_sm80_kernel" in n]
    assert len(names) == 2 and not any("qmm_sm80" in k.name for k in r.kernels)
    assert any("qmm_sm80_kernel" in n and "same launches in both runs" in n for n in r.notes)
    tiles = sorted(tile_m(n) or 0 for n in names)
    assert tiles == [16, 64]
    # Were they decode kernels (launches growing with the tokens), without detail lines the
    # one-token tile joins the expert gather by shape and the 64-row one stays unclassified.
    decode = ProfileReading(tool="cupti-delta", tokens=[96, 32], kernels=[
        KernelStat(name=n, launches_per_token=6.0, us_per_token=100.0) for n in names])
    a = attribute(decode, preset_rules(), "qwen3_moe")
    by_tile = {tile_m(k.name): k for k in a.kernels}
    assert by_tile[16].phase == "expert gather" and "by shape" in (by_tile[16].evidence or "")
    assert by_tile[64].phase == UNCLASSIFIED
    assert decode_path("cuda", a.kernels, None).path is None  # placement is not path evidence
