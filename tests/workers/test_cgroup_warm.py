"""The keeper that makes a command's move into its cgroup quick: one at a time, gone before
the worker moves (it would move it back out), none right after a move, and gone by its cap
when no command comes."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.workers.test_deathwatch import cgroups_writable

pytestmark = pytest.mark.skipif(not cgroups_writable(), reason="no writable cgroup v2 here")

# In a process of its own: descendants keeps the worker's choice in the module.
WORKER = """
import subprocess, sys, threading
from pathlib import Path
from workers import descendants

def keepers():
    return [t for t in threading.enumerate() if t.name == "benchfleet-cgroup-warm"]

how, _ = descendants.configure(Path(sys.argv[1]))
assert how == "cgroup", how
home, cgroup = descendants.own_cgroup(), descendants.cgroup()
descendants.warm()
descendants.warm()
assert len(keepers()) == 1, keepers()
with descendants.born_inside():
    assert not keepers(), "the keeper outlived the move"
    assert descendants.own_cgroup() == cgroup
    born = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True).stdout
assert descendants.own_cgroup() == home
descendants.warm()
assert not keepers(), "a keeper right after a move, while the lock is still quick"
descendants.WARM_AFTER_S, descendants.WARM_FOR_S = 0.0, 0.05
descendants.warm()
(keeper,) = keepers()
keeper.join(10)
assert not keeper.is_alive(), "the keeper outlived its cap"
descendants.end()
descendants.close()
print(born.strip().rsplit("/", 1)[-1])
"""


def test_the_keeper_ends_before_the_move_by_its_cap_and_is_skipped_after_one(
        tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The command was born in the commands' cgroup, not where the keeper keeps the worker.
    assert done.stdout.strip().startswith("benchfleet-w-"), done.stdout
