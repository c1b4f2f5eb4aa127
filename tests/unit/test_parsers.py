"""Parsers against samples written from MLXCEL-FACTS.md: complete, truncated, malformed, failed."""

from pathlib import Path

import pytest

from jobs.parsers import bench_decode, bench_mlxlm
from jobs.readings import BenchReading, Failure, RunOutput

SAMPLES = Path(__file__).parent.parent / "samples"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def decode(stdout: str = "", stderr: str = "", code: int = 0, **kw: object) -> object:
    return bench_decode.parse(RunOutput(stdout=stdout, stderr=stderr, exit_code=code, **kw))


def test_complete_metal_run_with_ansi_codes() -> None:
    reading = decode(sample("bench_decode_metal.stdout"), sample("bench_decode_metal.stderr"))
    assert reading == BenchReading(prompt_tokens=512, generated_tokens=128, prefill_ms=1302.44,
                                   prefill_tps=393.11, decode_ms=4610.37, decode_tps=27.55,
                                   peak_gb=19.04, load_s=4.812)


def test_truncated_block_names_what_is_missing() -> None:
    failure = decode(sample("bench_decode_truncated.stdout"))
    assert isinstance(failure, Failure) and failure.kind == "unparseable"
    assert "prefill, decode, peak_gb" in failure.reason


def test_no_block_and_two_blocks_are_unparseable() -> None:
    assert decode("hello\n").kind == "unparseable"  # type: ignore[attr-defined]
    twice = sample("bench_decode_metal.stdout") * 2
    failure = decode(twice)
    assert isinstance(failure, Failure) and "2 '[Profile Results]' block" in failure.reason


def test_malformed_number_is_not_read_as_a_measurement() -> None:
    text = sample("bench_decode_metal.stdout").replace("(27.55 tok/s)", "(27,55 tok/s)")
    failure = decode(text)
    assert isinstance(failure, Failure) and "decode" in failure.reason


def test_error_line_on_exit_1() -> None:
    failure = decode("", sample("bench_decode_noload.stderr"), 1)
    assert failure == Failure(kind="error", reason="Error: failed to load model: models/mlx/"
                              "deepseek-v4-flash-4bit: No such file or directory (os error 2) "
                              "(exit 1)")


def test_137_is_oom_and_124_is_timeout_never_oom() -> None:
    assert decode(code=137).kind == "oom"  # type: ignore[attr-defined]
    timeout = decode("CUDA_ERROR_OUT_OF_MEMORY", code=124)
    assert isinstance(timeout, Failure) and timeout.kind == "timeout"
    killed = decode(code=124, timed_out=True, timeout_s=600.0)
    assert isinstance(killed, Failure) and killed.reason == "timed out after 600 s (exit 124)"


@pytest.mark.parametrize("code", [1, 134])
def test_1_and_134_are_oom_only_when_the_output_says_so(code: int) -> None:
    oom = decode("", sample("bench_decode_cuda_oom.stderr"), code)
    assert isinstance(oom, Failure) and oom.kind == "oom" and "cuMemAlloc failed" in oom.reason
    plain = decode("", "thread 'main' panicked at src/main.rs:3:5\n", code)
    assert isinstance(plain, Failure) and plain.kind == "error"
    assert plain.reason == f"exited with code {code}: thread 'main' panicked at src/main.rs:3:5"


def test_prompt_shortened_by_context_is_noted() -> None:
    stderr = "[long-prompt] target=4096 tokens -> using 3968 tokens (max_context=4096, " \
             "reserved 128 for generation)\n"
    reading = decode(sample("bench_decode_metal.stdout"), stderr)
    assert isinstance(reading, BenchReading)
    assert reading.notes == ["prompt asked for 4096 tokens, ran 3968"]


def mlxlm(stdout: str = "", stderr: str = "", code: int = 0) -> object:
    return bench_mlxlm.parse(RunOutput(stdout=stdout, stderr=stderr, exit_code=code))


def test_mlxlm_result_line() -> None:
    assert mlxlm(sample("bench_mlxlm.stdout")) == BenchReading(
        prompt_tokens=512, generated_tokens=128, prefill_tps=714.82, decode_tps=142.37,
        finish_reason="length")


@pytest.mark.parametrize("stdout, reason", [
    ("", "0 'RESULT' lines"),
    ('RESULT {"prompt_tokens": 512, "prefill_tps": 7\n', "not JSON"),
    ('RESULT [1, 2]\n', "not a JSON object"),
    ('RESULT {"prompt_tokens": 512, "prefill_tps": 1.0, "gen_tokens": 128}\n',
     "lacks numeric decode_tps"),
    ('RESULT {"prompt_tokens": 512, "prefill_tps": true, "gen_tokens": 1, "decode_tps": 2}\n',
     "lacks numeric prefill_tps"),
])
def test_mlxlm_malformed(stdout: str, reason: str) -> None:
    failure = mlxlm(stdout)
    assert isinstance(failure, Failure) and failure.kind == "unparseable"
    assert reason in failure.reason


def test_mlxlm_two_results_are_refused() -> None:
    failure = mlxlm(sample("bench_mlxlm.stdout") * 2)
    assert isinstance(failure, Failure) and "2 'RESULT' lines" in failure.reason


def test_mlxlm_error_stage() -> None:
    failure = mlxlm("", "Traceback ...\nERROR load\n", 2)
    assert failure == Failure(kind="error", reason="ERROR load (exit 2)")


def test_error_prefix_counts_only_at_the_start_of_a_line() -> None:
    failure = decode("", "SyntaxError: invalid syntax\n", 1)
    assert failure == Failure(kind="error", reason="exited with code 1: SyntaxError: invalid "
                              "syntax")
