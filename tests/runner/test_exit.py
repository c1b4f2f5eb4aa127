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
print("x" * 200_000)  # more than a pipe's buffer: only a flush gets it all out
if {thread}:
    threading.Thread(target=time.sleep, args=(0.2,)).start()
sys.argv = ["benchfleet", *{args!r}]
cli.entry()
"""


def run(args: list[str], thread: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROGRAM.format(thread=thread, args=args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_the_process_skips_the_teardown_and_keeps_handlers_and_output() -> None:
    done = run(["--version"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "x" * 200_000
    assert lines[1].startswith("benchfleet, version ")
    assert "handler ran" in lines
    assert "torn down" not in lines  # the interpreter was not torn down


def test_the_exit_code_is_main_s() -> None:
    done = run(["status", "--no-such-option"])
    assert done.returncode == 2
    assert "No such option '--no-such-option'" in done.stderr
    assert "handler ran" in done.stdout.splitlines()


def test_a_thread_still_running_means_the_ordinary_exit() -> None:
    done = run(["--version"], thread=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "handler ran" in lines
    assert "torn down" in lines
