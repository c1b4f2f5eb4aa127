"""The MLX MoE payload as a worker meets it: a git repository at two commits, built with
`make release-cuda`, run through its mlxcel-bench-decode CLI on MLX's CPU backend at tiny width.
Its output is read here against MLXCEL-FACTS.md's layout by this file's own patterns."""

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.targets.mlx_repo import PayloadRepo, make_payload_repo, write_models

pytestmark = pytest.mark.integration

# FACTS: a tiny-width run must finish well inside this.
RUN_LIMIT_S = 60
ANSI = re.compile(r"\x1b\[[0-9;]*m")
GB = r"\d+\.\d\d GB"
MEMORY = rf"active {GB}, cache {GB}, active\+cache {GB}, phase peak {GB}"
LONG_PROMPT = (r"\[long-prompt\] target=(\d+) tokens -> using (\d+) tokens "
               r"\(max_context=(Some\(\d+\)|None), reserved (\d+) for generation\)")
# The report's lines in FACTS order; anything else in the stream is a line a parser skips.
LAYOUT = [
    r"\[Memory\] cache limit: (none applied \(allocator default\)|\d+\.\d\d GB)",
    rf"\[Load\] wall: \d+\.\d{{3}} s  MLX peak: {GB}",
    rf"\[Memory\] after load: {MEMORY}",
    LONG_PROMPT,
    rf"\[Memory\] after warmup \(prefill \+ warmup tokens\): {MEMORY}",
    LONG_PROMPT,
    rf"\[Memory\] after measured pass: {MEMORY}",
    r"\[Profile Results\]",
    r"  Prompt tokens:    (\d+)",
    r"  Generated tokens: (\d+)",
    r"  Prefill:          (\d+\.\d\d) ms \((\d+\.\d\d) tok/s\)",
    r"  Decode:           (\d+\.\d\d) ms \((\d+\.\d\d) tok/s\)",
    r"  Decode path:      (\S+)",
    rf"  MLX peak memory:  {GB}",
]
REPORT_PREFIXES = ("[Memory]", "[Load]", "[long-prompt]", "[Profile Results]", "  ")


@dataclass(frozen=True)
class Built:
    repo: PayloadRepo
    models: Path
    first: Path   # the program built at the first commit
    second: Path  # ... and at the second


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("mlx-moe")
    repo = make_payload_repo(root / "repo")
    programs = {}
    for label, commit in (("first", repo.first), ("second", repo.second)):
        tree = root / label
        subprocess.run(["git", "clone", "--quiet", str(repo.path), str(tree)], check=True)
        subprocess.run(["git", "checkout", "--quiet", commit], cwd=tree, check=True)
        subprocess.run(["make", "release-cuda", f"PYTHON={sys.executable}",
                        f"CARGO_TARGET_DIR={root / label}-target"], cwd=tree, check=True,
                       capture_output=True, env={**os.environ, "MLX_CUDA_ARCHITECTURES": "90a"})
        programs[label] = root / f"{label}-target" / "release" / "mlxcel-bench-decode"
    models = root / "models"
    write_models(models)
    return Built(repo, models, programs["first"], programs["second"])


def bench(program: Path, model: Path, *extra: str, tokens: int = 16,
          **env: str) -> subprocess.CompletedProcess[str]:
    """One run with the matched shape's flags; stderr merged into stdout in write order."""
    command = [str(program), "-m", str(model), "-p", "x", "--prompt-tokens", "64", "-n",
               str(tokens), "--warmup-tokens", "4", "--ignore-eos", "--no-chat-template", *extra]
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=RUN_LIMIT_S, env={**os.environ, **env})


def report_lines(output: str) -> list[str]:
    lines = [ANSI.sub("", line) for line in output.splitlines()]
    return [line for line in lines if line.startswith(REPORT_PREFIXES)]


def read_report(output: str) -> list[re.Match[str]]:
    lines = report_lines(output)
    assert len(lines) == len(LAYOUT), "\n".join(lines)
    matches = [re.fullmatch(pattern, line) for pattern, line in zip(LAYOUT, lines, strict=True)]
    for match, line in zip(matches, lines, strict=True):
        assert match, f"not in mlxcel's layout: {line!r}"
    return matches  # type: ignore[return-value]


def test_the_report_has_mlxcel_layout_and_its_figures_add_up(built: Built) -> None:
    start = time.monotonic()
    done = bench(built.second, built.models / "qwen3-30b-a3b-4bit", tokens=24)
    assert time.monotonic() - start < RUN_LIMIT_S
    assert done.returncode == 0, done.stdout
    report = read_report(done.stdout)
    assert report[3].groups() == ("64", "64", "Some(4096)", "24")
    assert report[5].groups() == report[3].groups()  # printed again for the measured pass
    assert (int(report[8][1]), int(report[9][1])) == (64, 24)
    prefill_ms, prefill_tps = map(float, report[10].groups())
    decode_ms, decode_tps = map(float, report[11].groups())
    assert prefill_tps == pytest.approx(64 / (prefill_ms / 1e3), rel=0.01)
    assert decode_tps == pytest.approx(24 / (decode_ms / 1e3), rel=0.01)
    assert report[12][1] == "engine"
    assert "\x1b[" in done.stdout  # the header is coloured, as mlxcel's may be


def test_a_model_that_cannot_load_is_an_error_line_and_exit_1(built: Built,
                                                               tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text('{"model_type": "qwen3_moe"}')
    for model in (tmp_path / "missing", tmp_path / "broken"):
        done = bench(built.second, model)
        assert done.returncode == 1
        assert done.stdout.startswith(f"Error: failed to load model: {model}"), done.stdout
        assert "Traceback" not in done.stdout and "[Profile Results]" not in done.stdout


def test_trace_arch_moe_detail_and_phase_marks(built: Built) -> None:
    done = bench(built.second, built.models / "qwen3-30b-a3b-4bit", tokens=6,
                 MLXCEL_TRACE_ARCH="", MLXCEL_PROFILE_QWEN3_MOE_DETAIL="1",
                 MLXCEL_BENCH_PHASE_MARKS="1")
    assert done.returncode == 0, done.stdout
    arch = [line for line in done.stdout.splitlines() if line.startswith("[mlxcel arch]")]
    assert len(arch) == 2
    assert arch[0].startswith("[mlxcel arch] compute capability none (cpu: ")
    assert "compiled for [90a]" in arch[0]  # the MLX_CUDA_ARCHITECTURES the build was given
    assert arch[1] == "[mlxcel arch] quantized matmul path on first call: cpu (device cpu)"
    sparse = re.findall(r"^\[QWEN3_MOE_SPARSE\] path=(fused|gather_qmm) tokens=(\d+) "
                        r"gate=\d+\.\d\dms expert=\d+\.\d\dms combine=(\d+\.\d\d)ms$",
                        done.stdout, re.MULTILINE)
    layers = 2
    # Each pass: one prefill call per layer, then one per layer per decode step.
    assert len(sparse) == layers * (1 + 4 + 1 + 6)
    assert {(p, n) for p, n, _ in sparse} == {("gather_qmm", "64"), ("fused", "1")}
    assert all(c == "0.00" for p, _, c in sparse if p == "fused")
    marks = re.findall(r"^\[phase\] (\w+) monotonic_ns=(\d+) boottime_ns=(\d+|na)$",
                       done.stdout, re.MULTILINE)
    assert [m[0] for m in marks] == ["warmup_start", "measured_start", "decode_start",
                                     "measured_end"]
    assert [int(m[1]) for m in marks] == sorted(int(m[1]) for m in marks)
    read_report(done.stdout)  # the hooks add lines; the report stays whole


def test_moe_detail_is_qwen3_only(built: Built) -> None:
    done = bench(built.second, built.models / "deepseek-v4-flash-4bit", tokens=4,
                 MLXCEL_PROFILE_QWEN3_MOE_DETAIL="1")
    assert done.returncode == 0 and "[QWEN3_MOE_SPARSE]" not in done.stdout


def dot_ops(path: Path) -> dict[str, int]:
    """Op counts of a DOT file in MLX's own layout: `{ ID [label ="Name", shape=rectangle]; }`."""
    counts: dict[str, int] = {}
    for name in re.findall(r'^\{ \d+ \[label ="([^"]+)", shape=rectangle\]; \}$',
                           path.read_text(), re.MULTILINE):
        counts[name] = counts.get(name, 0) + 1
    return counts


def test_decode_dot_is_mlx_export_with_gather_qmm_on_the_gather_path(built: Built,
                                                                      tmp_path: Path) -> None:
    model = built.models / "qwen3-30b-a3b-4bit"
    for fused in ("0", "1"):
        dot = tmp_path / f"decode-{fused}.dot"
        done = bench(built.second, model, tokens=4, MLXCEL_FUSED_MOE=fused,
                     MLXCEL_EXPORT_DECODE_DOT=str(dot))
        assert done.returncode == 0, done.stdout
        text = dot.read_text()
        assert text.startswith("digraph {") and re.search(r'^\{ rank=source; "\w+"; \}$', text,
                                                          re.MULTILINE)
        ops = dot_ops(dot)
        layers = 2
        if fused == "0":
            assert ops["GatherQMM"] == 3 * layers  # gate, up and down of one token
            assert ops["ArgPartition"] == layers and ops["Softmax"] >= layers
        else:
            assert "GatherQMM" not in ops
            assert ops["Gather"] >= 3 * layers  # the chosen experts' weights
        assert ops["QuantizedMatmul"] >= 4 * layers + 1  # attention and the LM head


def test_the_two_commits_differ_in_deepseek_decode_path(built: Built, tmp_path: Path) -> None:
    model = built.models / "deepseek-v4-flash-4bit"
    seen = {}
    for label, program in (("first", built.first), ("second", built.second)):
        dot = tmp_path / f"{label}.dot"
        done = bench(program, model, tokens=4, MLXCEL_EXPORT_DECODE_DOT=str(dot))
        assert done.returncode == 0, done.stdout
        seen[label] = (re.search(r"decode experts: (\w+)", done.stdout)[1],  # type: ignore[index]
                       "GatherQMM" in dot_ops(dot))
    assert seen == {"first": ("gather_qmm", True), "second": ("fused", False)}
    qwen = bench(built.first, built.models / "qwen3-30b-a3b-4bit", tokens=2)
    assert "decode experts: fused" in qwen.stdout  # qwen3 is fused at both commits


def kernel_log(path: Path) -> list[dict[str, object]]:
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        assert isinstance(r["name"], str) and r["name"]
        assert isinstance(r["ns"], int) and r["ns"] >= 0
    return records


def test_kernel_log_names_mlx_primitives_per_decode_step(built: Built, tmp_path: Path) -> None:
    model = built.models / "qwen3-30b-a3b-4bit"
    counts = {}
    for tokens in (4, 8):
        log = tmp_path / f"kernels-{tokens}.jsonl"
        done = bench(built.second, model, tokens=tokens, MLXCEL_FUSED_MOE="0",
                     STANDIN_KERNEL_LOG=str(log))
        assert done.returncode == 0, done.stdout
        read_report(done.stdout)  # output unchanged by the log
        records = kernel_log(log)
        counts[tokens] = sum(r["name"] == "GatherQMM" for r in records)
        assert {r["pid"] for r in records} == {records[0]["pid"]}
    layers = 2
    assert counts[8] - counts[4] == 4 * layers * 3  # 4 more tokens, 3 gathers per layer
    before = (tmp_path / "kernels-4.jsonl").read_text()
    bench(built.second, model, tokens=1, STANDIN_KERNEL_LOG=str(tmp_path / "kernels-4.jsonl"))
    assert (tmp_path / "kernels-4.jsonl").read_text().startswith(before)  # appended, not truncated


def test_mlx_pin_is_derived_from_the_installed_mlx(built: Built) -> None:
    script = built.repo.path / "scripts" / "ci" / "mlx_pinned_commit.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable})
    expected = hashlib.sha1(f"mlx=={version('mlx')}".encode()).hexdigest()
    assert done.returncode == 0 and done.stdout == expected + "\n"
    no_mlx = subprocess.run(["bash", str(script)], capture_output=True, text=True,
                            env={**os.environ, "PYTHON": "/bin/false"})
    assert no_mlx.returncode == 1 and no_mlx.stdout == ""
    assert "has no mlx" in no_mlx.stderr


def test_the_build_says_what_is_missing_without_mlx(built: Built, tmp_path: Path) -> None:
    done = subprocess.run(["make", "release-cuda", f"PYTHON={sys.executable} -S",
                           f"CARGO_TARGET_DIR={tmp_path}"], cwd=built.repo.path,
                          capture_output=True, text=True)
    assert done.returncode != 0
    assert "cannot import mlx" in done.stderr
    assert not (tmp_path / "release" / "mlxcel-bench-decode").exists()


def test_cupti_kernsum_runs_the_built_program_in_its_own_process(built: Built,
                                                               tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="cupti-kernsum records through torch.profiler")
    csv_path = tmp_path / "kernels.csv"
    command = [sys.executable, "-m", "workers.tools.cupti_kernsum", "--csv", str(csv_path),
               "--activity", "cpu", "--", str(built.second), "-m",
               str(built.models / "qwen3-30b-a3b-4bit"), "-p", "x", "--prompt-tokens", "32",
               "-n", "4", "--warmup-tokens", "1", "--ignore-eos", "--no-chat-template"]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=RUN_LIMIT_S * 2, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stdout
    read_report(done.stdout)
    # MLX runs no torch operator: the CPU activity sees none, and says so.
    assert csv_path.read_text().startswith("Time (%),Total Time (ns),Instances,")
    assert len(csv_path.read_text().splitlines()) == 1
    assert "no cpu_op events were recorded" in done.stdout
