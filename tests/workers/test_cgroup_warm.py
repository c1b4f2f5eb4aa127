"""The keeper that makes a command's move into its cgroup quick: one at a time, resting while
the worker waits (and not back after a wait that raised), gone before the worker steps in (it
would move it back out) and while it is inside, none right after a move, kept on when asked
again, gone by its cap when no command comes, none where the host refuses it, and none left
by an earlier configuration."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.workers.test_deathwatch import cgroups_writable

pytestmark = pytest.mark.skipif(not cgroups_writable(), reason="no writable cgroup v2 here")

# In a process of its own: descendants keeps the worker's choice in the module.
WORKER = """
import subprocess, sys, threading, time
from pathlib import Path
from workers import descendants

def keepers():
    return [t for t in threading.enumerate() if t.name == "benchfleet-cgroup-keeper"]

how, _ = descendants.configure(Path(sys.argv[1]))
assert how == "cgroup", how
home, cgroup = descendants.own_cgroup(), descendants.cgroup()
try:
    descendants.warm()
    descendants.warm()
    assert len(keepers()) == 1, keepers()
    with descendants.resting():
        assert not keepers(), "a keeper while the worker waits"
    assert len(keepers()) == 1, "no keeper again after the wait"
    try:
        with descendants.resting():
            raise TimeoutError  # a wait that ends the command's way
    except TimeoutError:
        pass
    assert not keepers(), "a keeper again after a wait that raised"
    with descendants.born_inside():
        assert not keepers(), "the keeper outlived the step in"
        descendants.warm()
        assert not keepers(), "a keeper while the worker is inside"
        assert descendants.own_cgroup() == cgroup
        born = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True,
                              text=True).stdout
    assert descendants.own_cgroup() == home
    descendants.QUICK_AFTER_MOVE_S = 60.0  # whatever the load, the move is that recent
    descendants.warm()
    assert not keepers(), "a keeper right after a move, while the lock is still quick"
    descendants.QUICK_AFTER_MOVE_S, descendants.KEEP_FOR_S = 0.0, 1.0
    descendants.warm()
    (keeper,) = keepers()
    time.sleep(0.7)  # most of its time, then asked again: it keeps on from then
    descendants.warm()
    time.sleep(0.7)
    assert keepers() == [keeper], "the keeper did not keep on when asked again"
    keeper.join(10)
    assert not keeper.is_alive(), "the keeper outlived its cap"
    descendants._pen.home = Path(sys.argv[1]) / "gone"  # as a host that refuses the keeper
    descendants.warm()
    assert not keepers()
    descendants._pen.home = home
    descendants.KEEP_FOR_S = 60.0
    descendants.warm()
    assert keepers()
    descendants.configure(Path(sys.argv[1]))  # a worker configured again: no keeper left
    assert not keepers(), "the first configuration's keeper outlived it"
finally:
    descendants.end()
    descendants.close()
print(born.strip().rsplit("/", 1)[-1])
"""


def test_the_keeper_lives_only_while_a_command_is_staged(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", WORKER, str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # The command was born in the commands' cgroup, not where the keeper keeps the worker.
    assert done.stdout.strip().startswith("benchfleet-w-"), done.stdout
