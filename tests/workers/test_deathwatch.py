"""A SIGKILLed worker's commands end with it through its watch, not a signal set in each
command; a command run without a watch still gets the parent-death signal; a subreaper worker
ending its commands' leftovers spares its watch."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.spec.recipes import Invocation
from tests.support.waits import eventually
from workers import deathwatch, execute

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="Linux 5.3+ only")

# A worker in miniature: its process groups listed and watched, one command started the way
# workers/execute.py starts a watched one (its own session, no parent-death signal).
WORKER = """
import subprocess, sys, signal
from pathlib import Path
from workers import deathwatch, orphans
registry = Path(sys.argv[1])
orphans.configure(registry)
assert deathwatch.start(registry, None)
command = subprocess.Popen(["sleep", "1000"], start_new_session=True)
orphans.started(command.pid)
print(command.pid, deathwatch.pid(), flush=True)
signal.pause()
"""
# What a command learns of itself: the parent-death signal it was started with.
PDEATHSIG = ("import ctypes, json; s = ctypes.c_int(0); "
             "ctypes.CDLL(None).prctl(2, ctypes.byref(s)); print(json.dumps(s.value))")


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Path]:
    registry = tmp_path / "w.pgids"
    assert deathwatch.start(registry, None)
    yield registry
    deathwatch.stop()


def test_a_sigkilled_worker_s_command_ends_with_it(tmp_path: Path) -> None:
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "w.pgids")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        command, watch = map(int, worker.stdout.readline().split())
        assert not gone(command) and not gone(watch)
        worker.kill()
        worker.wait()
        eventually(lambda: gone(command), 10, "the command gone with its worker")
        eventually(lambda: gone(watch), 10, "the watch gone once its work is done")
    finally:
        worker.kill()
        worker.wait()


def _pdeathsig(tmp_path: Path) -> int:
    call = Invocation(argv=[sys.executable, "-c", PDEATHSIG], env={}, timeout_s=30)
    out = execute.Files(tmp_path / "out.txt", tmp_path / "err.txt")
    run = execute.run(execute.Command("measure", "measure", call, tmp_path, out, tmp_path))
    assert run.exit_code == 0, (tmp_path / "err.txt").read_text()
    return int(json.loads(out.stdout.read_text()))


def _switches(pid: int) -> int:
    """How often the process has been scheduled off the CPU: once per wake-up, at least."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text()
                  .splitlines())
    return int(fields["voluntary_ctxt_switches"]) + int(fields["nonvoluntary_ctxt_switches"])


def test_a_watched_command_is_started_without_a_signal_or_wrapper(tmp_path: Path,
                                                                  watched: Path) -> None:
    watch = deathwatch.pid()
    assert watch is not None
    # Asleep in poll(2) once started (the kernel names where a process sleeps).
    eventually(lambda: "poll" in Path(f"/proc/{watch}/wchan").read_text(), 10,
               "the watch asleep")
    before = _switches(watch)
    # The command is the process the worker started (no wrapper exec'd it), and carries no
    # parent-death signal (so subprocess could vfork the worker).
    assert _pdeathsig(tmp_path) == 0
    assert _switches(watch) == before  # the watch slept through it


def test_an_unwatched_command_still_dies_with_its_parent(tmp_path: Path) -> None:
    deathwatch.stop()  # whatever worker an earlier test started in this process
    assert _pdeathsig(tmp_path) == signal.SIGKILL


def test_a_watch_that_was_killed_is_started_again_before_the_next_command(
        tmp_path: Path, watched: Path) -> None:
    first = deathwatch.pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    eventually(lambda: deathwatch.pid() is None, 10, "the watch ended")
    assert _pdeathsig(tmp_path) == 0
    again = deathwatch.pid()
    assert again is not None and again != first


SUBREAPER = """
import subprocess, sys
from workers.shared import processes
spared = subprocess.Popen(["sleep", "1000"])
ended = subprocess.Popen(["sh", "-c", "sleep 1000 & echo started; wait"],
                         stdout=subprocess.PIPE)
ended.stdout.readline()  # the shell's own sleep is running
print(processes.end_descendants(5, frozenset({spared.pid})), spared.poll(), ended.poll(),
      flush=True)
spared.kill()
"""


def test_a_subreaper_ends_its_descendants_but_the_spared() -> None:
    out = subprocess.run([sys.executable, "-c", SUBREAPER], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    # The shell and its sleep ended; the spared sleep still running (no exit code).
    assert out[0] == "2" and out[1] == "None" and out[2] != "None"
