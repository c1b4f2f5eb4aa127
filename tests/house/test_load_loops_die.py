"""The load a test makes on purpose (tests/support/load.py) ends with the test's process, even
when that process is killed and its `finally` never runs: a test run stopped from outside once
left 128 loops spinning under the next run, which then failed 3 timing tests."""

import signal
import subprocess
import sys
from pathlib import Path

from tests.support.waits import eventually

REPO = Path(__file__).resolve().parents[2]
# A test's process: it starts the loops, says their pids, and is killed inside the block.
CHILD = """
import os, signal, subprocess
from tests.support import load
with load.burners(2), load.hogs([], 1):
    me = os.getpid()
    kids = subprocess.run(["pgrep", "-P", str(me)], capture_output=True, text=True).stdout
    print(kids.replace("\\n", " "), flush=True)
    os.kill(me, signal.SIGKILL)
"""


def test_a_killed_test_process_leaves_no_load_loop_spinning() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    loops = [int(pid) for pid in done.stdout.split()]
    assert len(loops) == 3, done.stdout
    eventually(lambda: not any(_alive(pid) for pid in loops), 10.0, "the loops gone")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has stopped spinning; its new parent reaps it
