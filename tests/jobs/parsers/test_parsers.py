"""Bench parsers against samples hand-written exactly to MLXCEL-FACTS.md (no real mlxcel or
mlx-lm run can happen here): `mlxcel-bench-decode` output on both streams, its failures and
OOM patterns, and `scripts/bench_mlxlm.py`'s CSV rows. The sample values are realistic
figures for the GB10 and M3 Ultra checkpoints FACTS names; where FACTS does not give a CSV
field's value (`build_type`, `prompt`), the sample's value is ours and no parser reads it.
"""

from pathlib import Path

import pytest

from jobs.parsers import bench_decode, bench_mlxlm
from jobs.parsers.exits import OOM_PATTERNS
from jobs.parsers.readings import BenchReading, Failure, Parsed, RunOutput

SAMPLES = Path(__file__).parent.parent / "samples"
OK_CSV = "pylm_m3ultra_2026-11-30_measure_single_qwen3-30b-a3b-4bit.csv"
FAIL_CSV = "pylm_m3ultra_2026-11-30_measure_single_inkling-small-mlx-4bit.csv"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def decode(stdout: str = "", stderr: str = "", code: int = 0, **kw: object) -> Parsed:
    return bench_decode.parse(RunOutput(stdout=stdout, stderr=stderr, exit_code=code, **kw))


METAL = BenchReading(prompt_tokens=512, generated_tokens=128, prefill_ms=1302.44,
                     prefill_tps=393.11, decode_ms=4610.37, decode_tps=27.55, peak_gb=19.04,
                     load_s=4.812)


def test_newer_cuda_commit_with_decode_path_and_two_long_prompt_lines() -> None:
    reading = decode(sample("bench_decode_cuda.stdout"), sample("bench_decode_cuda.stderr"))
    assert reading == BenchReading(prompt_tokens=512, generated_tokens=128, prefill_ms=1893.20,
                                   prefill_tps=270.44, decode_ms=4052.69, decode_tps=31.34,
                                   peak_gb=22.07, load_s=9.880, decode_path="engine")


def test_older_metal_commit_with_ansi_codes_and_phase_marks() -> None:
    assert decode(sample("bench_decode_metal.stdout"), sample("bench_decode_metal.stderr")) == METAL


def test_very_old_commit_without_load_or_peak_memory_lines() -> None:
    reading = decode(sample("bench_decode_veryold.stdout"))
    assert isinstance(reading, BenchReading)
    assert (reading.decode_tps, reading.peak_gb, reading.load_s) == (24.80, None, None)


def test_stdout_and_stderr_are_read_together() -> None:
    """The block on stderr, its figures anywhere: which stream a `[...]` line takes is open."""
    stdout, stderr = sample("bench_decode_metal.stdout"), sample("bench_decode_metal.stderr")
    assert decode(stderr, stdout) == METAL
    head, block = stdout.split("\x1b[1;32m[Profile Results]\x1b[0m\n")
    assert decode(head + block, "[Profile Results]\n") == METAL


def test_unknown_backend_lines_inside_the_block_are_skipped() -> None:
    lines = sample("bench_decode_metal.stdout").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "Decode:" in line)
    lines[at:at] = ["[mlx-rocm] bound HIP device 0: AMD Radeon 8060S (gfx1151)\n",
                    "[hipBLASLt caps] fp8=0 bf16=1 tf32=0\n"]
    assert decode("".join(lines), sample("bench_decode_metal.stderr")) == METAL


def test_truncated_block_names_what_is_missing() -> None:
    failure = decode(sample("bench_decode_truncated.stdout"))
    assert failure == Failure(kind="unparseable", reason="'[Profile Results]' block lacks "
                              "prefill, decode (output truncated or malformed)")


def test_no_block_and_two_blocks_are_unparseable() -> None:
    assert decode("hello\n").kind == "unparseable"  # type: ignore[union-attr]
    twice = decode(sample("bench_decode_metal.stdout"), sample("bench_decode_metal.stdout"))
    assert isinstance(twice, Failure) and "2 '[Profile Results]' block" in twice.reason


def test_malformed_number_is_not_read_as_a_measurement() -> None:
    text = sample("bench_decode_metal.stdout").replace("(27.55 tok/s)", "(27,55 tok/s)")
    failure = decode(text)
    assert isinstance(failure, Failure) and "lacks decode" in failure.reason


def test_error_line_on_exit_1() -> None:
    failure = decode("", sample("bench_decode_noload.stderr"), 1)
    assert failure == Failure(kind="error", reason="Error: failed to load model: models/mlx/"
                              "deepseek-v4-flash-4bit: No such file or directory (os error 2) "
                              "(exit 1)")


@pytest.mark.parametrize("line", [
    "MLX error: [cuda] cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY",
    "RuntimeError: CUDA OUT OF MEMORY while allocating 2.00 GiB",
    "terminate called after throwing an instance of 'std::bad_alloc'",
    "memory allocation of 25769803776 bytes failed",
    "[metal::malloc] Attempting to allocate 25769803776 bytes which is greater than the maximum "
    "allowed buffer size of 22906503168 bytes.",
    "[METAL::MALLOC] Resource limit (499000) exceeded.",
    "cuda_error_out_of_memory",
    "cudaErrorMemoryAllocation: out of resources",
    "CUMEMALLOC FAILED",
])
@pytest.mark.parametrize("code", [1, 134])
def test_every_oom_pattern_counts_case_insensitively(line: str, code: int) -> None:
    oom = decode("", f"[long-prompt] target=512 tokens -> using 512 tokens\n{line}\n", code)
    assert isinstance(oom, Failure) and oom.kind == "oom" and line in oom.reason


def test_the_eight_patterns_are_mlxcels() -> None:
    assert len(OOM_PATTERNS) == 8
    metal = decode("", sample("bench_decode_metal_oom.stderr"), 134)
    assert isinstance(metal, Failure) and metal.kind == "oom" and "metal::malloc" in metal.reason
    cuda = decode("", sample("bench_decode_cuda_oom.stderr"), 101)
    assert isinstance(cuda, Failure) and cuda.kind == "oom" and "cuMemAlloc" in cuda.reason


def test_137_is_oom_and_124_is_timeout_never_oom() -> None:
    assert decode(code=137).kind == "oom"  # type: ignore[union-attr]
    timeout = decode("", sample("bench_decode_metal_oom.stderr"), 124)
    assert isinstance(timeout, Failure) and timeout.kind == "timeout"
    killed = decode(code=124, timed_out=True, timeout_s=600.0)
    assert isinstance(killed, Failure) and killed.reason == "timed out after 600 s (exit 124)"


def test_other_exits_are_errors_with_their_last_line() -> None:
    plain = decode("", "thread 'main' panicked at src/main.rs:3:5\n", 101)
    assert plain == Failure(kind="error", reason="exited with code 101: thread 'main' panicked "
                            "at src/main.rs:3:5")
    failure = decode("", "SyntaxError: invalid syntax\n", 1)  # `Error:` only at a line's start
    assert failure == Failure(kind="error", reason="exited with code 1: SyntaxError: invalid "
                              "syntax")


def test_prompt_shortened_by_context_is_noted_once_not_per_pass() -> None:
    line = ("[long-prompt] target=4096 tokens -> using 3968 tokens (max_context=Some(4096), "
            "reserved 128 for generation)\n")
    reading = decode(sample("bench_decode_metal.stdout"), line + "[phase] x\n" + line)
    assert isinstance(reading, BenchReading)
    assert reading.notes == ["prompt asked for 4096 tokens, ran 3968 (max_context=Some(4096))"]
    unlimited = line.replace("Some(4096)", "None")
    reading = decode(sample("bench_decode_metal.stdout"), unlimited)
    assert reading.notes == ["prompt asked for 4096 tokens, ran 3968 (max_context=None)"]  # type: ignore[union-attr]


def mlxlm(files: dict[str, str] | None = None, stderr: str = "", code: int = 0) -> Parsed:
    return bench_mlxlm.parse(RunOutput(stdout="", stderr=stderr, exit_code=code,
                                       files=files or {}))


def test_mlxlm_reads_the_row_the_run_wrote() -> None:
    reading = mlxlm({f"benchmarks/{OK_CSV}": sample(OK_CSV)}, sample("bench_mlxlm_ok.stderr"))
    assert reading == BenchReading(prompt_tokens=512, generated_tokens=128, prefill_ms=341.66,
                                   prefill_tps=1498.54, decode_ms=1520.73, decode_tps=84.17,
                                   baseline_version="mlx-lm-0.28.2")


@pytest.mark.parametrize("field, kind, says", [
    ("FAIL:bench", "error", "the baseline failed at bench (FAIL:bench in benchmarks/"),
    ("FAIL:warmup", "error", "failed at warmup"),
    ("FAIL:no_output", "error", "failed at no_output"),
    ("FAIL:no_result", "error", "failed at no_result"),
    ("FAIL:exit", "error", "failed at exit"),
    ("FAIL:timeout", "timeout", "the baseline timed out (FAIL:timeout"),
    ("SKIP:oom_estimate", "oom", "skipped by the driver's memory estimate (SKIP:oom_estimate"),
    ("FAIL?odd", "unparseable", "neither FAIL:<kind> nor SKIP:oom_estimate"),
])
def test_mlxlm_failed_row_is_a_failure_with_its_kind(field: str, kind: str, says: str) -> None:
    """The driver exits 0 when the model failed: the row's 15th field says why."""
    csv_text = sample(FAIL_CSV).replace("FAIL:bench", field)
    failure = mlxlm({f"benchmarks/{FAIL_CSV}": csv_text}, sample("bench_mlxlm_fail.stderr"))
    assert isinstance(failure, Failure) and failure.kind == kind and says in failure.reason


def test_mlxlm_exit_0_without_a_row_is_a_failure() -> None:
    skipped = mlxlm({}, sample("bench_mlxlm_skip.stderr"))
    assert isinstance(skipped, Failure) and skipped.reason.startswith("no CSV row: the driver "
                                                                      "skipped the model")
    nothing = mlxlm({})
    assert nothing == Failure(kind="unparseable", reason="no CSV row: the driver exited 0 but "
                              "wrote no benchmarks/pylm_*.csv in its working directory")
    header = sample(OK_CSV).splitlines()[0] + "\n"
    empty = mlxlm({f"benchmarks/{OK_CSV}": header})
    assert isinstance(empty, Failure) and "has a header but no row" in empty.reason


def test_mlxlm_path_that_is_not_a_directory() -> None:
    failure = mlxlm({}, "Error: models/mlx/kimi-k3-4bit is not a directory\n", 1)
    assert failure == Failure(kind="error", reason="Error: models/mlx/kimi-k3-4bit is not a "
                              "directory (exit 1)")


def test_mlxlm_malformed_csv_is_named() -> None:
    rows = sample(OK_CSV)
    two = mlxlm({f"benchmarks/{OK_CSV}": rows + rows.splitlines()[1] + "\n"})
    assert isinstance(two, Failure) and "2 CSV rows" in two.reason
    other = mlxlm({f"benchmarks/{OK_CSV}": rows.replace("decode_tok_s", "decode_tps")})
    assert isinstance(other, Failure) and "the header is not bench_mlxlm.py's" in other.reason
    short = mlxlm({f"benchmarks/{OK_CSV}": rows.replace(",128,deterministic-512", "")})
    assert isinstance(short, Failure) and "the row has 12 fields, the header 14" in short.reason
    bad = mlxlm({f"benchmarks/{OK_CSV}": rows.replace(",84.17,", ",fast,")})
    assert isinstance(bad, Failure) and "decode_tok_s is not a number ('fast')" in bad.reason
    ignored = mlxlm({f"benchmarks/{OK_CSV}": rows, "notes.txt": "pylm_x.csv"})
    assert isinstance(ignored, BenchReading)
