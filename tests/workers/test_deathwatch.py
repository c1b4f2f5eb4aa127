"""Where a worker has a cgroup for its commands, they end with a SIGKILLed worker through its
watch, not a signal set in each; the watch sleeps through a command; a command without a watch
(none asked for, or one that could not start) still gets the parent-death signal.

End to end, through a real worker SIGKILLed mid-command: tests/faults/test_descendants.py."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.spec.recipes import Invocation
from tests.faults.harness import gone
from tests.support.waits import eventually
from workers import deathwatch, descendants, execute

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

# A worker in miniature: its commands' cgroup made and watched as service.start does, one
# command started in it as execute.run starts a watched one. It prints the command's pid.
WORKER = """
import subprocess, sys, signal
from pathlib import Path
from workers import deathwatch, descendants
how, _ = descendants.configure(Path(sys.argv[1]))
assert how == "cgroup", how
assert deathwatch.start(descendants.cgroup())
with descendants.born_inside():
    command = subprocess.Popen(["sh", "-c", "sleep 1000 & sleep 1000"], start_new_session=True)
print(command.pid, deathwatch.pid(), flush=True)
signal.pause()
"""
# What a command learns of itself: the parent-death signal it was started with.
PDEATHSIG = ("import ctypes, json; s = ctypes.c_int(0); "
             "ctypes.CDLL(None).prctl(2, ctypes.byref(s)); print(json.dumps(s.value))")

# The same, and how often the watch (its pid the argument) was scheduled off the CPU at the
# command's start and 0.3 s later.
SLEPT_THROUGH = ("import ctypes, json, sys, time; s = ctypes.c_int(0); "
                 "ctypes.CDLL(None).prctl(2, ctypes.byref(s)); "
                 "n = lambda: sum(int(l.split()[1]) for l in open(f'/proc/{sys.argv[1]}/status') "
                 "if 'ctxt_switches' in l); a = n(); time.sleep(0.3); "
                 "print(json.dumps([s.value, a, n()]))")


def cgroups_writable() -> bool:
    own = descendants.own_cgroup()
    return own is not None and os.access(own, os.W_OK) and os.access(own / "cgroup.procs",
                                                                      os.W_OK)


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Path]:
    # The watch only writes cgroup.kill once this process dies; a folder stands in for it.
    assert deathwatch.start(tmp_path)
    yield tmp_path
    deathwatch.stop()


@pytest.mark.skipif(not cgroups_writable(), reason="no writable cgroup v2 here")
def test_a_sigkilled_worker_s_commands_end_with_it(tmp_path: Path) -> None:
    worker = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "w")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None
        shell, watch = map(int, worker.stdout.readline().split())
        cgroup = descendants.cgroup_path(tmp_path / "w")
        assert cgroup is not None
        inside = eventually(lambda: [int(p) for p in (cgroup / "cgroup.procs").read_text()
                                     .split()] if len((cgroup / "cgroup.procs").read_text()
                                                      .split()) == 3 else None,
                            10, "the shell and its two sleeps in the cgroup")
        assert shell in inside
        worker.kill()
        worker.wait()
        eventually(lambda: all(gone(p) for p in inside), 10, "the commands gone with it")
        eventually(lambda: gone(watch), 10, "the watch gone once its work is done")
    finally:
        worker.kill()
        worker.wait()
        if (made := descendants.cgroup_path(tmp_path / "w")) is not None and made.exists():
            eventually(lambda: not (made / "cgroup.procs").read_text(), 10, "the cgroup empty")
            made.rmdir()


def _pdeathsig(tmp_path: Path) -> int:
    call = Invocation(argv=[sys.executable, "-c", PDEATHSIG], env={}, timeout_s=30)
    out = execute.Files(tmp_path / "out.txt", tmp_path / "err.txt")
    run = execute.run(execute.Command("measure", "measure", call, tmp_path, out, tmp_path))
    assert run.exit_code == 0, (tmp_path / "err.txt").read_text()
    return int(json.loads(out.stdout.read_text()))




def test_a_watched_command_is_started_without_a_signal_or_wrapper(tmp_path: Path,
                                                                  watched: Path) -> None:
    watch = deathwatch.pid()
    assert watch is not None
    # It writes its ready byte just before poll(2): count from once it is asleep there.
    eventually(lambda: "poll" in Path(f"/proc/{watch}/wchan").read_text(), 10,
               "the watch asleep in poll")
    # The command is the process the worker started (no wrapper exec'd it), and carries no
    # parent-death signal (so subprocess could vfork the worker). The watch may wake to start
    # it (workers/births.py), and then sleeps through it: counted from inside the command.
    call = Invocation(argv=[sys.executable, "-c", SLEPT_THROUGH, str(watch)], env={},
                      timeout_s=30)
    out = execute.Files(tmp_path / "out.txt", tmp_path / "err.txt")
    run = execute.run(execute.Command("measure", "measure", call, tmp_path, out, tmp_path))
    assert run.exit_code == 0, (tmp_path / "err.txt").read_text()
    signal_set, before, after = json.loads(out.stdout.read_text())
    assert signal_set == 0
    assert after == before  # the watch slept through it


def test_an_unwatched_command_still_dies_with_its_parent(tmp_path: Path) -> None:
    deathwatch.stop()  # whatever worker an earlier test started in this process
    assert _pdeathsig(tmp_path) == signal.SIGKILL


def test_a_watch_that_cannot_watch_leaves_the_signal_to_each_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a kernel or under a seccomp profile that refuses what the watch needs: it exits
    # before it says it is ready.
    failing = tmp_path / "failing.py"
    failing.write_text("raise SystemExit(1)\n")
    monkeypatch.setattr(deathwatch, "_SCRIPT", str(failing))
    assert not deathwatch.start(tmp_path)
    assert deathwatch.pid() is None
    assert _pdeathsig(tmp_path) == signal.SIGKILL
    deathwatch.stop()


def test_a_watch_that_was_killed_is_started_again_before_the_next_command(
        tmp_path: Path, watched: Path) -> None:
    first = deathwatch.pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    eventually(lambda: deathwatch.pid() is None, 10, "the watch ended")
    assert _pdeathsig(tmp_path) == 0
    again = deathwatch.pid()
    assert again is not None and again != first


def test_the_watch_ignores_the_stop_signals_only_the_worker_s_end_ends_it(
        tmp_path: Path, watched: Path) -> None:
    watch = deathwatch.pid()
    assert watch is not None
    status = dict(line.split(":", 1) for line in Path(f"/proc/{watch}/status").read_text()
                  .splitlines())
    ignored = int(status["SigIgn"], 16)
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    assert all(ignored & (1 << (stop - 1)) for stop in stops)
    for stop in stops:
        os.kill(watch, stop)
    assert _pdeathsig(tmp_path) == 0  # a command later, the same watch still watches
    assert deathwatch.pid() == watch
