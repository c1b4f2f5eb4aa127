"""Profiles: the nsys two-run delta, MLX's real DOT exports, the tool stand-ins, phase rules.

The nsys CSVs and the bench output around them are hand-written to MLXCEL-FACTS.md (kernel
names as MLX's CUDA sources spell them); the DOT files are made by `mlx` itself in the test,
so nobody here shaped them; the tool stand-ins run a program written in the test that knows
only docs/kernel-log.md.
"""

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from jobs.errors import SpecError
from jobs.parsers import metal_dot, mlxcel_lines, nsys_delta
from jobs.parsers.readings import (
    Failure,
    KernelStat,
    PathCounts,
    ProfileInput,
    ProfileReading,
    RunOutput,
)
from jobs.profiles.attribution import UNCLASSIFIED, attribute, phase_of, with_idle
from jobs.profiles.phases import PhaseRules
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.presets import render
from tests.support.samples import SAMPLES, TOOLS

GATHER = ("void mlx::core::cu::fp_gather_qmv<__nv_bfloat16, 32, (int)4, true>(const unsigned "
          "char *, const unsigned char *, const __nv_bfloat16 *, __nv_bfloat16 *, const unsigned "
          "int *, const unsigned int *, int, int, int)")
QMM_SM80 = ("void mlx::core::cu::qmm_sm80_kernel<__nv_bfloat16, (int)64, (int)4, (bool)1, 128, "
            "128, 32>(const unsigned int *, const __nv_bfloat16 *, const __nv_bfloat16 *, const "
            "__nv_bfloat16 *, __nv_bfloat16 *, const unsigned int *, int, int)")


def text(name: str) -> str:
    return (SAMPLES / name).read_text()


def out(stdout: str, stderr: str = "", code: int = 0) -> RunOutput:
    return RunOutput(stdout=stdout, stderr=stderr, exit_code=code)


def nsys_input(long_csv: str | None = None, **codes: int) -> ProfileInput:
    return ProfileInput(steps={
        "long": out(text("nsys_ds4_400.stdout"), text("nsys_ds4_400.stderr"),
                    codes.get("long", 0)),
        "short": out(text("nsys_ds4_200.stdout"), text("nsys_ds4_200.stderr")),
        "long-stats": out(long_csv if long_csv is not None else text("nsys_ds4_long.csv"),
                          code=codes.get("long_stats", 0)),
        "short-stats": out(text("nsys_ds4_short.csv"))})


def rules() -> PhaseRules:
    return load(Sweep, render("moe-decode-gap", "abc", "/srv/mlxcel"), "preset.yaml")[0].phases


def test_delta_gives_per_token_launches_and_time() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading) and reading.tokens == [400, 200]
    gather = next(k for k in reading.kernels if k.name == GATHER)
    assert gather.launches_per_token == 129.0
    assert gather.us_per_token == pytest.approx(129 * 95.21, rel=0.01)
    # deepseek_v4 has no [QWEN3_MOE_SPARSE] hook: no path counts, by the facts.
    assert reading.paths is None
    assert (reading.first_call_path, reading.arch) == ("qmm_sm80", "sm_121")


def test_zero_delta_and_one_sided_kernels_are_explained_not_dropped_silently() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading)
    names = {k.name for k in reading.kernels}
    notes = "\n".join(reading.notes)
    assert QMM_SM80 not in names  # the prefill GEMM: the same launches in both runs
    assert f"{QMM_SM80}: same launches in both runs (774 vs 774)" in notes
    assert "event_signal_kernel" in names
    assert "event_signal_kernel: only in the long run; counted per token" in notes
    assert "copy_s<float, float>(const float *, float *, long): only in the short run " \
           "(2 launches); not per-token, left out" in notes


def test_quoted_csv_and_csv_on_stderr_read_the_same() -> None:
    lines = text("nsys_ds4_long.csv").splitlines()
    header = ",".join(f'"{c}"' for c in lines[2].split(","))
    quoted = "\n".join([*lines[:2], "", " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):", "",
                        header, *lines[3:]])
    plain, other = nsys_delta.parse(nsys_input()), nsys_delta.parse(nsys_input(quoted))
    assert isinstance(other, ProfileReading) and other.kernels == plain.kernels  # type: ignore[union-attr]
    steps = dict(nsys_input().steps)
    steps["long-stats"] = out("", text("nsys_ds4_long.csv"))
    assert nsys_delta.parse(ProfileInput(steps=steps)) == plain


def test_malformed_or_empty_reports_name_their_step() -> None:
    lines = text("nsys_ds4_long.csv").splitlines()
    lines[5] = ",".join(lines[5].split(",")[:3])
    failure = nsys_delta.parse(nsys_input("\n".join(lines)))
    assert failure == Failure(kind="unparseable",
                              reason="step long-stats: CSV line 6 has 3 fields, the header 9")
    failure = nsys_delta.parse(nsys_input("Processing [...]\nno report was produced\n"))
    assert isinstance(failure, Failure) and "no cuda_gpu_kern_sum CSV header" in failure.reason
    bad_number = text("nsys_ds4_long.csv").replace(",53922,", ",many,")
    failure = nsys_delta.parse(nsys_input(bad_number))
    assert isinstance(failure, Failure) and "is not a number" in failure.reason
    skipped = nsys_delta.parse(nsys_input(
        "Processing [long.nsys-rep] with [cuda_gpu_kern_sum.py]... \n"
        "SKIPPED: long.nsys-rep does not contain CUDA kernel data.\n"))
    assert isinstance(skipped, Failure) and skipped.reason.startswith(
        "step long-stats: nsys found no CUDA kernel in the report")
    assert "does not implement docs/kernel-log.md" in skipped.reason


def test_failed_step_and_equal_token_counts() -> None:
    failure = nsys_delta.parse(nsys_input(long_stats=1))
    assert isinstance(failure, Failure) and failure.reason.startswith("step long-stats:")
    same = nsys_input().model_copy(update={"steps": {**nsys_input().steps,
                                                     "short": nsys_input().steps["long"]}})
    failure = nsys_delta.parse(same)
    assert isinstance(failure, Failure) and "nothing to subtract" in failure.reason


def test_every_kernel_of_the_ds4_sample_lands_in_a_phase() -> None:
    reading = nsys_delta.parse(nsys_input())
    assert isinstance(reading, ProfileReading)
    a = attribute(reading, rules(), "deepseek_v4")
    by = {p.phase: p for p in a.phases}
    assert a.timed and sum(p.share or 0 for p in a.phases) == pytest.approx(1.0)
    assert by[UNCLASSIFIED].kernels == 0
    assert by["expert gather"].kernels == 3  # fp_gather_qmv, arange, copy_g_nd
    router = {k.name.split("<")[0].split("::")[-1] for k in a.kernels if k.phase == "router"}
    assert router == {"block_sort_kernel", "binary_vs", "unary_v", "gather", "gather_axis"}
    assert by["synchronisation"].kernels == 1  # event_signal_kernel
    assert 0.55 < (by["expert gather"].share or 0) < 0.65
    # Without the family, its sqrt/softplus scoring and hash `take` fall back to the defaults.
    plain = {p.phase: p for p in attribute(reading, rules()).phases}
    assert plain["router"].kernels == 2 and plain["embedding"].kernels == 1


def sparse_lines(decode_calls: int, path: str = "gather_qmm", prefill: int = 96) -> str:
    """[QWEN3_MOE_SPARSE] lines as FACTS writes them: one per MoE call, tokens=1 at decode."""
    pre = ["[QWEN3_MOE_SPARSE] path=gather_qmm tokens=512 gate=0.41ms expert=6.88ms "
           "combine=0.37ms" for _ in range(prefill)]
    combine = "0.00" if path == "fused" else "0.05"
    dec = [f"[QWEN3_MOE_SPARSE] path={path} tokens=1 gate=0.06ms expert=0.21ms "
           f"combine={combine}ms" for _ in range(decode_calls)]
    return "\n".join(pre + dec) + "\n"


def test_qwen3_sparse_lines_give_calls_per_token_from_the_delta() -> None:
    long, short = sparse_lines(48 * 418), sparse_lines(48 * 218)
    paths = mlxcel_lines.path_delta(long, short, 200)
    assert paths is not None and paths.decode_calls_per_token == 48.0
    assert (paths.decode_gather, paths.prefill_gather, paths.decode_fused) == (48 * 418, 96, 0)
    assert paths.decode_expert_ms == pytest.approx(0.21 * 48 * 418)
    fused = mlxcel_lines.path_counts("\x1b[2m" + sparse_lines(3, "fused", 0) + "\x1b[0m")
    assert fused == PathCounts(decode_fused=3, decode_gate_ms=0.18, decode_expert_ms=0.63)
    # The old bare `path=` lines are not mlxcel's: nothing reads them.
    assert mlxcel_lines.path_counts("path=gather_qmm tokens=1\nnothing here\n") is None
    assert mlxcel_lines.first_call_path("") is None


def qwen3_reading(launches: float, paths: PathCounts | None) -> ProfileReading:
    return ProfileReading(tool="nsys-delta", tokens=[400, 200], paths=paths, kernels=[
        KernelStat(name=QMM_SM80, launches_per_token=launches, us_per_token=2500.0),
        KernelStat(name="void mlx::core::cu::qmv_kernel<float>()", launches_per_token=97,
                   us_per_token=900.0)])


GATHER_DECODE = PathCounts(decode_gather=48 * 418, decode_calls_per_token=48.0)


@pytest.mark.parametrize("launches, paths, phase, why", [
    (144.0, GATHER_DECODE, "expert gather", "144 decode launches/token = 3 x 48 gather_qmm"),
    (144.0, None, UNCLASSIFIED, "no [QWEN3_MOE_SPARSE] lines to tie"),
    (144.0, PathCounts(decode_fused=48 * 418, decode_calls_per_token=48.0), UNCLASSIFIED,
     "took 0 gather_qmm and 20064 fused"),
    (100.0, GATHER_DECODE, UNCLASSIFIED, "not a whole multiple (1 to 4) of the 48 MoE calls"),
    (240.0, GATHER_DECODE, UNCLASSIFIED, "not a whole multiple"),
])
def test_a_shape_dependent_kernel_goes_by_the_runs_evidence(
        launches: float, paths: PathCounts | None, phase: str, why: str) -> None:
    a = attribute(qwen3_reading(launches, paths), rules())
    row = next(k for k in a.kernels if k.name == QMM_SM80)
    assert row.phase == phase and row.evidence is not None and why in row.evidence
    assert any(why in n for n in a.notes)
    assert phase_of(QMM_SM80, rules()) == UNCLASSIFIED  # never by its name alone


def test_gpu_idle_row_is_wall_minus_kernels_and_never_clamped() -> None:
    a = attribute(qwen3_reading(144.0, GATHER_DECODE), rules())
    idle = with_idle(a, 5000.0, "mlxcel decode 200.00 tok/s")
    assert idle.idle and idle.idle.idle_us_per_token == pytest.approx(5000 - 3400)
    # A kernel sum over an unprofiled wall is no share of it: only a timeline gives wall shares.
    assert idle.phase("expert gather").wall_share is None  # type: ignore[union-attr]
    negative = with_idle(a, 3000.0, "x")
    assert negative.idle and negative.idle.idle_us_per_token == pytest.approx(-400.0)
    untimed = a.model_copy(update={"total_us_per_token": None})
    assert with_idle(untimed, 5000.0, "x").idle is None


def test_phases_in_the_older_form_still_read_and_a_mixture_is_refused() -> None:
    base = render("moe-decode-gap", "abc", "/srv/mlxcel")
    start, end = base.index("phases:"), base.index("question:")
    old = base[:start] + ("phases:\n  expert gather: [gather_qmv]\n  fused moe: [fused_moe]\n")
    sweep = load(Sweep, old + base[end:], "old.yaml")[0]
    assert sweep.phases == PhaseRules(default={"expert gather": ["gather_qmv"],
                                               "fused moe": ["fused_moe"]})
    mixed = base[:start] + "phases:\n  default: {router: [softmax]}\n  router: [topk]\n"
    with pytest.raises(SpecError) as error:
        load(Sweep, mixed + base[end:], "mixed.yaml")
    assert "either 'phase: [patterns]'" in str(error.value) and "mixes default" in str(
        error.value)
    bad = base.replace('{pattern: "qmm_sm80", phase: expert gather}',
                       '{pattern: "qmm_sm80", phase: experts}')
    with pytest.raises(SpecError) as error:
        load(Sweep, bad, "bad.yaml")
    assert "by_evidence: phase 'experts' is not a phase of 'default'" in str(error.value)
    broken = base.replace('router: ["logaddexp"', 'router: ["logaddexp(("')
    with pytest.raises(SpecError) as error:
        load(Sweep, broken, "broken.yaml")
    assert "families.deepseek_v4: phase 'router': pattern 'logaddexp(('" in str(error.value)


@pytest.fixture(scope="module")
def mx() -> ModuleType:
    """MLX's CPU wheels: on Linux (CI) they are part of the test extra and must import."""
    if sys.platform.startswith("linux"):
        import mlx.core
        return mlx.core
    return pytest.importorskip("mlx.core")


def moe_token(mx: ModuleType, family: str) -> list[object]:
    """One MoE layer of a decode token, as the family routes it, on MLX itself."""
    mx.random.seed(6)
    hidden, experts, top_k, width = 64, 16, 4, 128
    x = mx.random.normal((1, hidden))
    gate = mx.quantize(mx.random.normal((experts, hidden)), group_size=32, bits=4)
    w_up = mx.quantize(mx.random.normal((experts, width, hidden)), group_size=32, bits=4)
    w_down = mx.quantize(mx.random.normal((experts, hidden, width)), group_size=32, bits=4)
    table = mx.random.randint(0, experts, (512, top_k)).astype(mx.uint32)
    mx.eval(x, gate, w_up, w_down, table)  # inputs, not ops of the token's graph
    logits = mx.quantized_matmul(x, *gate, transpose=True, group_size=32, bits=4)
    if family == "deepseek_v4":  # sqrt(softplus), hash-routed by `take`
        scores = mx.sqrt(mx.logaddexp(logits, 0.0))
        inds = mx.take(table, mx.array([7]), axis=0)
        weights = mx.take_along_axis(scores, inds, axis=-1)
        weights = weights / weights.sum(axis=-1, keepdims=True)
    elif family == "inkling":  # sigmoid, normalised with logaddexp / logsumexp
        inds = mx.argpartition(-mx.sigmoid(logits), kth=top_k - 1, axis=-1)[..., :top_k]
        log_scores = -mx.logaddexp(0.0, -mx.take_along_axis(logits, inds, axis=-1))
        weights = mx.exp(log_scores - mx.logsumexp(log_scores, axis=-1, keepdims=True))
    else:  # qwen3_moe: softmax over argpartition's top-k
        inds = mx.argpartition(-logits, kth=top_k - 1, axis=-1)[..., :top_k]
        weights = mx.softmax(mx.take_along_axis(logits, inds, axis=-1), axis=-1)
    swiglu = mx.compile(lambda g, u: mx.sigmoid(g) * g * u)
    xe = mx.expand_dims(x, (-2, -3))
    up = mx.gather_qmm(xe, *w_up, rhs_indices=inds, transpose=True, group_size=32, bits=4)
    h = swiglu(up, up)
    down = mx.gather_qmm(h, *w_down, rhs_indices=inds, transpose=True, group_size=32, bits=4)
    y = (down.squeeze(-2) * weights[..., None]).sum(axis=-2)
    tally = mx.zeros((experts,)).at[inds.reshape(-1)].add(1.0)  # expert load: `Scatter Sum`
    return [y, tally]


@pytest.mark.parametrize("family", ["qwen3_moe", "deepseek_v4", "inkling"])
def test_real_mlx_dot_exports_parse_and_every_op_lands_in_a_phase(
        mx: ModuleType, family: str, tmp_path: Path) -> None:
    path = tmp_path / "decode.dot"
    mx.export_to_dot(str(path), *moe_token(mx, family))
    dot = path.read_text()
    assert dot.startswith("digraph {\n{ ") and ' [label ="' in dot  # MLX's own layout
    steps = {"trace": out(""), "dot": out("", sparse_lines(2, prefill=0))}
    reading = metal_dot.parse(ProfileInput(steps=steps, files={"decode.dot": dot}))
    assert isinstance(reading, ProfileReading) and reading.tool == "metal-dot"
    counts = {k.name: k.launches_per_token for k in reading.kernels}
    assert counts["GatherQMM"] == 2 and counts["QuantizedMatmul"] == 1
    assert counts["Scatter Sum"] == 1  # a primitive name with a space, kept whole
    assert counts["CompiledSigmoidMultiplyMultiply"] == 1
    assert reading.paths == PathCounts(decode_gather=2, decode_gate_ms=0.12,
                                       decode_expert_ms=0.42, decode_combine_ms=0.1)
    a = attribute(reading, rules(), family)
    phase = {k.name: k.phase for k in a.kernels}
    assert a.phase(UNCLASSIFIED).kernels == 0, phase  # type: ignore[union-attr]
    assert (phase["GatherQMM"], phase["QuantizedMatmul"]) == ("expert gather", "dense matmul")
    assert (phase["Scatter Sum"], phase["Sum"]) == ("combine", "combine")
    assert phase["CompiledSigmoidMultiplyMultiply"] == "elementwise"
    router = {name for name, p in phase.items() if p == "router"}
    assert router == {"qwen3_moe": {"ArgPartition", "GatherAxis", "Softmax"},
                      "deepseek_v4": {"Gather", "GatherAxis", "LogAddExp", "Sqrt"},
                      "inkling": {"ArgPartition", "GatherAxis", "Sigmoid", "LogAddExp",
                                  "LogSumExp"}}[family]
    assert not a.timed and all(k.us_per_token is None for k in reading.kernels)


def test_dot_without_ops_or_file_is_refused() -> None:
    steps = {"trace": out(""), "dot": out("")}
    missing = metal_dot.parse(ProfileInput(steps=steps))
    assert isinstance(missing, Failure) and missing.reason.startswith("the dot step wrote no "
                                                                      "decode.dot")
    empty = metal_dot.parse(ProfileInput(steps=steps, files={
        "decode.dot": 'digraph {\n{ rank=source; "A"; }\n{ "B"; }\n"A" -> "B"\n}'}))
    assert isinstance(empty, Failure) and "no op nodes" in empty.reason


# A program of the test's own that implements docs/kernel-log.md, nothing more: it times real
# work per "kernel" and prints a `Generated tokens:` line like a bench does.
CONTRACT_PROGRAM = """
import json, os, sys, time
tokens, log = int(sys.argv[1]), []
def kernel(name, n):
    start = time.perf_counter_ns()
    sum(i * i for i in range(n))
    log.append({"name": name, "ns": time.perf_counter_ns() - start})
kernel("prefill_gemm<float>(const float *, int)", 20000)
for _ in range(tokens):
    kernel("decode_gather<float, 4>(const float *, const unsigned int *)", 3000)
    kernel("decode_gather<float, 4>(const float *, const unsigned int *)", 3000)
    # As long as the gathers: a kernel of a few µs a token, timed on a host whose hypervisor
    # steals milliseconds, once came out longer in total in the short run than in the long
    # one, and the rule leaves such a kernel out (jobs/parsers/nsys_delta.py `delta`).
    kernel("norm<float>", 3000)
if os.environ.get("STANDIN_KERNEL_LOG") and "--ignore-contract" not in sys.argv:
    with open(os.environ["STANDIN_KERNEL_LOG"], "a") as f:
        f.write("".join(json.dumps(r) + "\\n" for r in log))
print("[Profile Results]\\n  Generated tokens: %d" % tokens)
"""


def standin_profile(tmp_path: Path, *extra: str) -> ProfileInput:
    program = tmp_path / "program.py"
    program.write_text(CONTRACT_PROGRAM)
    steps = {}
    # Six times the tokens: a run slowed by a busy host still takes longer than its twin.
    for name, tokens in (("long", 120), ("short", 20)):
        report = tmp_path / name
        steps[name] = _tool("nsys", "profile", "-t", "cuda", "--cuda-graph-trace=node",
                            "--force-overwrite=true", "-o", str(report), sys.executable,
                            str(program), str(tokens), *extra)
        steps[f"{name}-stats"] = _tool("nsys", "stats", "--report", "cuda_gpu_kern_sum",
                                       "--format", "csv", "--force-export=true",
                                       f"{report}.nsys-rep")
    return ProfileInput(steps=steps)


def _tool(name: str, *args: str) -> RunOutput:
    done = subprocess.run([sys.executable, str(TOOLS / name), *args], capture_output=True,
                          text=True, timeout=60)
    return RunOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode)


def test_nsys_standin_profiles_any_program_that_keeps_the_contract(tmp_path: Path) -> None:
    reading = nsys_delta.parse(standin_profile(tmp_path))
    assert isinstance(reading, ProfileReading), reading
    launches = {k.name: k.launches_per_token for k in reading.kernels}
    assert launches == {"decode_gather<float, 4>(const float *, const unsigned int *)": 2.0,
                        "norm<float>": 1.0}
    assert any("prefill_gemm<float>" in n and "same launches" in n for n in reading.notes)
    csv_text = standin_profile(tmp_path).steps["long-stats"].stdout
    assert '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)",' \
           '"Max (ns)","StdDev (ns)","Name"' in csv_text


def test_nsys_standin_says_so_when_the_program_keeps_no_log(tmp_path: Path) -> None:
    profile = standin_profile(tmp_path, "--ignore-contract")
    assert "SKIPPED:" in profile.steps["long-stats"].stdout
    failure = nsys_delta.parse(profile)
    assert isinstance(failure, Failure) and "does not implement docs/kernel-log.md" in \
        failure.reason


def test_nsys_standin_refuses_a_broken_log_line(tmp_path: Path) -> None:
    report = tmp_path / "bad.nsys-rep"
    report.write_text(json.dumps({"name": "k", "ns": 5}) + "\n" + json.dumps({"ns": 3}) + "\n")
    stats = _tool("nsys", "stats", "--report", "cuda_gpu_kern_sum", "--format", "csv",
                  "--force-export=true", str(report))
    assert stats.exit_code == 1 and f"{report} line 2: not a kernel-log record" in stats.stderr


def test_xctrace_standin_keeps_a_trace_bundle(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(CONTRACT_PROGRAM)
    bundle = tmp_path / "decode.trace"
    run = _tool("xcrun", "xctrace", "record", "--template", "Metal System Trace", "--output",
                str(bundle), "--launch", "--", sys.executable, str(program), "3")
    assert run.exit_code == 0 and "Generated tokens: 3" in run.stdout
    lines = (bundle / "kernel-log.jsonl").read_text().splitlines()
    assert len(lines) == 1 + 3 * 3 and json.loads(lines[0])["name"].startswith("prefill_gemm")
    assert json.loads((bundle / "standin.json").read_text())["template"] == "Metal System Trace"


def test_cupti_tables_from_files_read_as_the_nsys_ones() -> None:
    """cupti-kernsum writes the same table as `nsys stats` into {out}: the same delta."""
    steps = nsys_input().steps
    tables = {"long.csv": text("nsys_ds4_long.csv"), "short.csv": text("nsys_ds4_short.csv")}
    cupti = nsys_delta.parse_cupti(ProfileInput(steps={k: steps[k] for k in ("long", "short")},
                                                files=tables))
    nsys = nsys_delta.parse(nsys_input())
    assert isinstance(cupti, ProfileReading) and isinstance(nsys, ProfileReading)
    assert cupti.tool == "cupti-delta" and cupti.kernels == nsys.kernels
    missing = nsys_delta.parse_cupti(ProfileInput(steps={k: steps[k] for k in ("long", "short")},
                                                  files={"long.csv": tables["long.csv"]}))
    assert missing == Failure(kind="unparseable", reason="step short wrote no short.csv "
                              "(cupti-kernsum's --csv)")


def test_a_decode_window_with_no_kernel_time_is_not_timed() -> None:
    # A loaded host can run the short profile slower than the long one: the window between
    # them keeps no kernel, or kernels of no time. Shares of nothing are not a split.
    for kernels in ([], [KernelStat(name=GATHER, launches_per_token=1.0, us_per_token=0.0)]):
        a = attribute(ProfileReading(tool="cupti-delta", tokens=[400, 200], kernels=kernels),
                      rules(), "deepseek_v4")
        assert not a.timed and a.total_us_per_token is None
        assert all(p.share is None for p in a.phases)
    timed = attribute(ProfileReading(tool="cupti-delta", tokens=[400, 200], kernels=[
        KernelStat(name=GATHER, launches_per_token=1.0, us_per_token=5.0)]), rules(),
        "deepseek_v4")
    assert timed.timed and timed.total_us_per_token == 5.0
