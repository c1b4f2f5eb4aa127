"""ruff over the project and mypy --strict over jobs/, as part of the test command."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_ruff_is_clean() -> None:
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "jobs", "runner", "workers",
                           "deploy", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_mypy_strict_on_jobs() -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "jobs"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
