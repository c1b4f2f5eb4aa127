"""The README's "Your own fleet" section, run as written: its shell block, under `bash -e`, in a
home of the test's own (so `~/.benchfleet/fleet` is the test's), from a folder whose `.venv` is
this checkout's. Two workers, a sweep, a rerun, a record that passes `check`, `fleet down`."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
# The whole block on a busy 2-core machine: about a minute; the bound says when to give up.
BLOCK_DEADLINE_S = 240
# The idle gate's wait, set as the README says a user on a busy machine sets it.
GATE_WAIT = {"BENCHFLEET_IDLE_MAX_WAIT_S": "2", "BENCHFLEET_IDLE_INTERVAL_S": "0.5"}


def readme_block() -> str:
    section = (ROOT / "README.md").read_text().split("## Your own fleet", 1)[1].split("\n## ")[0]
    found = re.search(r"```sh\n(.*?)```", section, re.S)
    assert found, "the section has a shell block"
    return found.group(1)


def test_the_readme_fleet_section_runs_as_written(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "clone"
    home.mkdir()
    cwd.mkdir()
    (cwd / ".venv").symlink_to(Path(sys.executable).parents[1])
    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("BENCHFLEET_", "VIRTUAL_ENV"))},
           "HOME": str(home), "COLUMNS": "160", **GATE_WAIT}
    try:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", readme_block()], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=BLOCK_DEADLINE_S)
    finally:  # a block that stopped half-way leaves nothing running
        subprocess.run([str(cwd / ".venv" / "bin" / "benchfleet"), "fleet", "down"], env=env,
                       capture_output=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "1 cell queued again" in done.stdout
    assert re.search(r"records/demo-\S+\.json: passes", done.stdout), done.stdout[-2000:]
    (record_file,) = (cwd / "records").glob("demo-*.json")
    record = json.loads(record_file.read_text())
    assert record["cells_measured"] == record["cells_expected"] == 12
    assert {g["backend"] for g in record["groups"]} == {"cpu", "cuda"}
    assert {run["worker"] for run in record["host_runs"]} == {"cpu-1", "cuda-1"}
    rerun = [h for h in record["history"] if "-cpu-tinymoe-a3-fused-r2-" in h["cell_id"]]
    assert [(h["attempt"], h["used"]) for h in rerun] == [(1, False), (2, True)]
    # `fleet status` in the block listed the processes; `fleet down` ended every one.
    pids = [int(pid) for pid in re.findall(r"│\s*\S+\s*│[^│]*│\s*(\d+)\s*│ live", done.stdout)]
    assert len(pids) == 3 and not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
