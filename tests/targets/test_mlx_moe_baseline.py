"""The payload's baseline driver, scripts/bench_mlxlm.py, in the real driver's form: a child
`python -c` whose output stays with the driver, progress on stderr, one CSV row per model,
FAIL kinds, resume by skipping a model already in the day's CSV, exit 0 on a model failure."""

import csv
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.targets.mlx_repo import PAYLOAD, model_configs

pytestmark = pytest.mark.integration

DRIVER = PAYLOAD / "scripts" / "bench_mlxlm.py"
HEADER = ("model,model_path,prompt_tokens,generated_tokens,prefill_ms,prefill_tok_s,decode_ms,"
          "decode_tok_s,date,hardware,baseline_version,build_type,max_tokens,prompt")
QWEN = "qwen3-30b-a3b-4bit"
TODAY = datetime.date.today().isoformat()


def model(root: Path, name: str = QWEN, config: object = None) -> Path:
    directory = root / "models" / name
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(model_configs("tiny")[QWEN]) if config is None else str(config)
    (directory / "config.json").write_text(text)
    return directory


def drive(cwd: Path, *args: str, timeout: float = 120,
          **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DRIVER), *args, "--max-tokens", "8",
                           "--warmup-tokens", "2", "--cooldown", "0"], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **env})


def rows(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def test_a_model_is_one_csv_row_and_nothing_on_stdout(tmp_path: Path) -> None:
    directory = model(tmp_path)
    done = drive(tmp_path, str(directory), "--suffix", "run1")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the child's RESULT line stays with the driver
    assert f">>> [1/1] [warmup+bench] {QWEN} (0.0 GB) ..." in done.stderr
    assert "    decode: " in done.stderr and " tok/s (" in done.stderr
    table = tmp_path / "benchmarks" / f"pylm_unknown_{TODAY}_run1_single_{QWEN}.csv"
    header, row = rows(table)
    assert ",".join(header) == HEADER
    assert len(row) == 14 and row[:2] == [QWEN, str(directory)]
    prompt, generated = int(row[2]), int(row[3])
    assert (prompt, generated) == (512, 8)  # the matched shape: 512-token prompt, EOS ignored
    prefill_ms, prefill_tps, decode_ms, decode_tps = map(float, row[4:8])
    assert prefill_tps == pytest.approx(prompt / prefill_ms * 1e3, rel=0.01)
    assert decode_tps == pytest.approx(generated / decode_ms * 1e3, rel=0.01)
    assert row[8:10] == [TODAY, "unknown"] and row[10].startswith("mlx-lm-")
    assert row[12:] == ["8", "long-512"]


def test_a_second_run_of_the_day_is_skipped_unless_it_has_its_own_suffix(tmp_path: Path) -> None:
    directory = model(tmp_path)
    assert drive(tmp_path, str(directory)).returncode == 0
    again = drive(tmp_path, str(directory))
    assert again.returncode == 0 and f"[skip-done] {QWEN}" in again.stderr
    assert len(rows(tmp_path / "benchmarks" / f"pylm_unknown_{TODAY}_single_{QWEN}.csv")) == 2
    other = drive(tmp_path, str(directory), "--suffix", "b")
    assert other.returncode == 0 and "[skip-done]" not in other.stderr


def test_a_missing_path_is_the_one_exit_1(tmp_path: Path) -> None:
    model(tmp_path)  # present in MODELS_DIR, but the path is taken as given
    done = drive(tmp_path, "models/nowhere", MODELS_DIR=str(tmp_path / "models"))
    assert done.returncode == 1
    assert done.stderr.strip() == "Error: models/nowhere is not a directory"
    assert not (tmp_path / "benchmarks").exists()


def failed_row(cwd: Path, *args: str, **env: str) -> tuple[list[str], str]:
    done = drive(cwd, *args, **env)
    assert done.returncode == 0, done.stderr  # a failed model still exits 0
    (table,) = (cwd / "benchmarks").glob("*.csv")
    header, row = rows(table)
    assert ",".join(header) == HEADER and len(row) == 15
    assert row[2:8] == [""] * 6  # no figures on a failed row
    return row, done.stderr


def test_a_model_that_fails_to_load_is_fail_warmup(tmp_path: Path) -> None:
    row, stderr = failed_row(tmp_path, str(model(tmp_path, config="{")))
    assert row[14] == "FAIL:warmup" and "    FAIL:warmup (" in stderr


def test_a_child_over_its_timeout_is_fail_timeout(tmp_path: Path) -> None:
    directory = model(tmp_path)
    done = subprocess.run([sys.executable, str(DRIVER), str(directory), "--max-tokens",
                           "1000000", "--timeout", "3", "--cooldown", "0"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (table,) = (tmp_path / "benchmarks").glob("*.csv")
    assert rows(table)[1][14] == "FAIL:timeout"


def test_a_model_over_the_memory_cap_is_skipped(tmp_path: Path) -> None:
    row, stderr = failed_row(tmp_path, str(model(tmp_path)), PYLM_BENCH_MAX_GB="0.000001")
    assert row[14] == "SKIP:oom_estimate" and "SKIP:oom_estimate" in stderr


def test_vlm_mode_names_its_csv_and_needs_its_image(tmp_path: Path) -> None:
    directory = model(tmp_path)
    row, _ = failed_row(tmp_path, str(directory), "--vlm")
    assert row[14] == "FAIL:warmup"  # tests/fixtures/test_image.png is not there
    (tmp_path / "benchmarks").rename(tmp_path / "first-try")
    image = tmp_path / "tests" / "fixtures" / "test_image.png"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"\x89PNG\r\n")
    assert drive(tmp_path, str(directory), "--vlm").returncode == 0
    (_, measured), = [rows(p) for p in (tmp_path / "benchmarks").glob("*.csv")]
    assert (tmp_path / "benchmarks" / f"pylm_unknown_vlm_{TODAY}_single_{QWEN}.csv").is_file()
    assert measured[10].startswith("mlx-vlm-") and measured[13] == "image"


def test_all_runs_every_model_in_models_dir(tmp_path: Path) -> None:
    model(tmp_path, "a-model")
    model(tmp_path, "b-model")
    done = drive(tmp_path, "all", MODELS_DIR=str(tmp_path / "models"))
    assert done.returncode == 0, done.stderr
    assert "[1/2]" in done.stderr and "[2/2]" in done.stderr
    table = tmp_path / "benchmarks" / f"pylm_unknown_{TODAY}.csv"
    assert [row[0] for row in rows(table)[1:]] == ["a-model", "b-model"]
