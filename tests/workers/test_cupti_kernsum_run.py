"""cupti-kernsum running real programs in-process through torch.profiler. No GPU here: the CUDA
activity must refuse clearly, and the CPU activity proves the in-process run, the exit status
passing through and the CSV. tests/targets/h200_check.sh runs the CUDA side on an H200."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.tools.cupti_kernsum import COLUMNS

pytestmark = pytest.mark.integration
torch = pytest.importorskip("torch", reason="cupti-kernsum records through torch.profiler")

PROGRAM = """import sys
import torch
a = torch.ones(32, 32)
for _ in range(int(sys.argv[1])):
    a = torch.relu(a @ a) / 32
print("done", sys.argv[1:], flush=True)
sys.exit(int(sys.argv[2]))
"""


def kernsum(tmp_path: Path, *command: str,
            activity: str = "cpu") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workers.tools.cupti_kernsum", "--csv",
                           str(tmp_path / "out" / "k.csv"), "--activity", activity, "--",
                           *command], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2], env={**os.environ, "PYTHONPATH": "."})


def table(tmp_path: Path) -> list[dict[str, str]]:
    with (tmp_path / "out" / "k.csv").open(newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        return list(reader)


def test_a_python_program_runs_in_process_and_its_events_are_summed(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    done = kernsum(tmp_path, "python3", str(script), "7", "3")
    assert done.returncode == 3  # the program's own exit status
    assert done.stdout == "done ['7', '3']\n"  # its output, untouched
    rows = {row["Name"]: row for row in table(tmp_path)}
    assert rows["aten::relu"]["Instances"] == "7" and rows["aten::mm"]["Instances"] == "7"
    assert int(rows["aten::mm"]["Total Time (ns)"]) > 0


def test_a_launcher_script_runs_with_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "launcher"
    script.write_text(f"#!{sys.executable}\n" + PROGRAM)
    script.chmod(0o755)
    done = kernsum(tmp_path, str(script), "2", "0")
    assert done.returncode == 0 and done.stdout == "done ['2', '0']\n"
    assert {row["Name"]: row["Instances"] for row in table(tmp_path)}["aten::relu"] == "2"


def test_without_cuda_the_kernel_profile_refuses_before_running(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the refusal cannot be shown here")
    marker = tmp_path / "ran"
    done = kernsum(tmp_path, "python3", "-c", f"open({str(marker)!r}, 'w')", activity="cuda")
    assert done.returncode == 2 and not marker.exists()
    assert "cupti-kernsum: torch sees no CUDA device" in done.stderr


def test_a_native_binary_is_refused(tmp_path: Path) -> None:
    done = kernsum(tmp_path, "/bin/echo", "hi")
    assert done.returncode == 2 and done.stdout == ""
    assert "is not a Python program" in done.stderr and "native binary" in done.stderr
