"""Profile parsers on samples written from MLXCEL-FACTS.md: nsys two-run delta, Metal DOT."""

from pathlib import Path

import pytest

from jobs.attribution import attribute, phase_of
from jobs.parsers import metal_dot, mlxcel_lines, nsys_delta
from jobs.readings import Failure, PathCounts, ProfileInput, ProfileReading, RunOutput
from jobs.specfile import load
from jobs.sweep import Sweep
from runner.presets import render

SAMPLES = Path(__file__).parent.parent / "samples"
GATHER = ("void mlx::core::cu::fp_gather_qmv<__nv_bfloat16, 32, (int)4, true>(const unsigned "
          "char *, const unsigned char *, const __nv_bfloat16 *, __nv_bfloat16 *, const unsigned "
          "int *, const unsigned int *, int, int, int)")


def text(name: str) -> str:
    return (SAMPLES / name).read_text()


def nsys_input(long_csv: str | None = None, **codes: int) -> ProfileInput:
    def out(stdout: str, stderr: str = "", step: str = "") -> RunOutput:
        return RunOutput(stdout=stdout, stderr=stderr, exit_code=codes.get(step, 0))
    return ProfileInput(steps={
        "long": out(text("nsys_ds4_400.stdout"), text("nsys_ds4_400.stderr"), "long"),
        "short": out(text("nsys_ds4_200.stdout"), text("nsys_ds4_200.stderr"), "short"),
        "long-stats": out(long_csv if long_csv is not None else text("nsys_ds4_long.csv"),
                          step="long_stats"),
        "short-stats": out(text("nsys_ds4_short.csv"), step="short_stats")})


def phases() -> dict[str, list[str]]:
    preset = render("moe-decode-gap", "abc", "/srv/mlxcel")
    return dict(load(Sweep, preset, "preset.yaml")[0].phases)


def test_delta_gives_per_token_launches_and_time() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading) and reading.tokens == [400, 200]
    gather = next(k for k in reading.kernels if k.name == GATHER)
    assert gather.launches_per_token == 129.0
    assert gather.us_per_token == pytest.approx(129 * 151.2, rel=0.01)
    assert reading.paths == PathCounts(decode_gather=43 * (19 + 399), prefill_gather=86)
    assert (reading.first_call_path, reading.arch) == ("qmm_sm80", "sm_121")


def test_zero_delta_and_one_sided_kernels_are_explained_not_dropped_silently() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading)
    names = {k.name for k in reading.kernels}
    notes = "\n".join(reading.notes)
    assert not any("qmm_sm80" in n for n in names)
    assert "qmm_sm80_kernel" in notes and "same launches in both runs (258 vs 258)" in notes
    assert "event_signal_kernel" in names
    assert "event_signal_kernel: only in the long run; counted per token" in notes
    assert "copy_s<float, float>(const float *, float *, long): only in the short run " \
           "(2 launches); not per-token, left out" in notes


def test_malformed_csv_names_its_line() -> None:
    lines = text("nsys_ds4_long.csv").splitlines()
    lines[5] = ",".join(lines[5].split(",")[:3])
    failure = nsys_delta.parse(nsys_input("\n".join(lines)))
    assert failure == Failure(kind="unparseable", reason="CSV line 6 has 3 fields, the header 9")
    failure = nsys_delta.parse(nsys_input("Processing [...]\nno report was produced\n"))
    assert isinstance(failure, Failure) and "no cuda_gpu_kern_sum CSV header" in failure.reason
    bad_number = text("nsys_ds4_long.csv").replace(",54438,", ",many,")
    failure = nsys_delta.parse(nsys_input(bad_number))
    assert isinstance(failure, Failure) and "is not a number" in failure.reason


def test_failed_step_and_equal_token_counts() -> None:
    failure = nsys_delta.parse(nsys_input(long_stats=1))
    assert isinstance(failure, Failure) and failure.reason.startswith("step long-stats:")
    same = nsys_input().model_copy(update={"steps": {**nsys_input().steps,
                                                     "short": nsys_input().steps["long"]}})
    failure = nsys_delta.parse(same)
    assert isinstance(failure, Failure) and "nothing to subtract" in failure.reason


def test_attribution_by_preset_rules_shows_unclassified() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading)
    a = attribute(reading, phases())
    by = {p.phase: p for p in a.phases}
    assert a.timed and sum(p.share or 0 for p in a.phases) == pytest.approx(1.0)
    assert by["expert gather"].kernels == 3  # fp_gather_qmv, arange, copy_g_nd
    assert by["router"].kernels == 2 and by["attention"].kernels == 2
    assert {k.phase for k in a.kernels if "binary_g_nd" in k.name} == {"unclassified"}
    assert by["unclassified"].kernels == 2  # binary_g_nd and event_signal_kernel
    assert 0.6 < (by["expert gather"].share or 0) < 0.8
    assert phase_of("qmv_kernel<float>", phases()) == "other"
    assert phase_of("gather_qmv_kernel<float>", phases()) == "expert gather"


def test_metal_dot_counts_ops_of_one_decode_token() -> None:
    steps = {"trace": RunOutput(stdout="", stderr="", exit_code=0),
             "dot": RunOutput(stdout="", stderr="path=gather_qmm tokens=1\n" * 42, exit_code=0)}
    reading = metal_dot.parse(ProfileInput(steps=steps,
                                           files={"decode.dot": text("metal_inkling_decode.dot")}))
    assert isinstance(reading, ProfileReading) and reading.tool == "metal-dot"
    counts = {k.name: k.launches_per_token for k in reading.kernels}
    assert counts["GatherQMM"] == 126 and counts["QuantizedMatmul"] == 42 * 6 + 1
    assert all(k.us_per_token is None for k in reading.kernels)
    a = attribute(reading, phases())
    assert not a.timed and a.phase("expert gather").launches_per_token == 42 * 4  # type: ignore[union-attr]
    missing = metal_dot.parse(ProfileInput(steps=steps))
    assert missing == Failure(kind="unparseable", reason="the dot step wrote no decode.dot")
    empty = metal_dot.parse(ProfileInput(steps=steps, files={"decode.dot": "digraph {}\n"}))
    assert isinstance(empty, Failure) and "no op nodes" in empty.reason


def test_mlxcel_lines_without_lines() -> None:
    assert mlxcel_lines.path_counts("nothing here\n") is None
    assert mlxcel_lines.first_call_path("") is None
    assert mlxcel_lines.path_counts("\x1b[2mpath=fused tokens=1\x1b[0m\n") == PathCounts(
        decode_fused=1)
