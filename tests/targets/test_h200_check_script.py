"""tests/targets/h200_check.sh end to end at CI widths: it builds the payload repository, runs
each arm unprofiled and under cupti-kernsum, and packs one tar.gz plus a summary. Here, with no
GPU, the profiles must fail loudly and the rest must still arrive."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
pytest.importorskip("torch", reason="the check profiles through torch.profiler")

ROOT = Path(__file__).parents[2]


def test_the_check_runs_every_arm_and_packs_its_results(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path / "out"),
           "WORK": str(tmp_path / "work"), "WIDTH": "tiny", "MODELS": "qwen3-30b-a3b-4bit"}
    done = subprocess.run(["bash", "tests/targets/h200_check.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (tmp_path / "out" / "h200-summary.txt").read_text()
    for fused in ("0", "1"):
        assert f"== qwen3-30b-a3b-4bit, MLXCEL_FUSED_MOE={fused}" in summary
        assert f"profile qwen3-30b-a3b-4bit.fused{fused} at 64 failed: 2" in summary
    assert summary.count("unprofiled decode ") == 2
    with tarfile.open(tmp_path / "out" / "h200-check.tar.gz") as tar:
        names = set(tar.getnames())
    assert "./qwen3-30b-a3b-4bit.fused0.bench.txt" in names
    assert "./qwen3-30b-a3b-4bit.fused1.profile32.txt" in names
    assert not any(name.startswith(("./repo", "./target")) for name in names)
