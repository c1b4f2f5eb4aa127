"""The `benchfleet` process ends without tearing the interpreter down (runner/cli.py:entry),
and loses nothing by it: exit handlers run, output piped out arrives whole, exit codes hold;
with a thread of its own still running it exits the ordinary way."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]

# A program ending in entry(): an exit handler, an object torn down only by an ordinary
# exit (its __del__ runs when the interpreter frees the module), and optionally a thread.
PROGRAM = """
import atexit, sys, threading, time
from runner import cli

class Kept:
    def __del__(self):
        print("torn down", flush=True)

kept = Kept()
atexit.register(lambda: print("handler ran"))
print("x" * 200_000)
print("buffered")  # still in stdout's buffer when entry() exits: only a flush gets it out
if {thread}:  # alive when entry() looks, a few milliseconds on; one not a daemon is joined
    threading.Thread(target=time.sleep, args=(3 if {thread} == "joined" else 60,),
                     daemon={thread} == "daemon").start()
sys.argv = ["benchfleet", *{args!r}]
cli.entry()
"""


def run(args: list[str], thread: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM.format(thread=repr(thread), args=args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_the_process_skips_the_teardown_and_keeps_handlers_and_output() -> None:
    done = run(["--version"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == ["x" * 200_000, "buffered"]
    assert lines[2].startswith("benchfleet, version ")
    assert "handler ran" in lines
    assert "torn down" not in lines  # the interpreter was not torn down


def test_the_exit_code_is_main_s() -> None:
    done = run(["status", "--no-such-option"])
    assert done.returncode == 2
    assert "No such option '--no-such-option'" in done.stderr
    assert "handler ran" in done.stdout.splitlines()


def test_a_thread_still_running_means_the_ordinary_exit() -> None:
    done = run(["--version"], thread="joined")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "handler ran" in lines
    assert "torn down" in lines


def test_a_daemon_thread_does_not_hold_it_back() -> None:
    done = run(["--version"], thread="daemon")
    assert done.returncode == 0, done.stderr
    assert "torn down" not in done.stdout.splitlines()


def test_a_closed_stdout_is_no_error() -> None:
    done = subprocess.run(f"{sys.executable} -m runner.cli --version >&-", shell=True,
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
