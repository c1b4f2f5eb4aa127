"""Load on this host, made on purpose: burners that raise load1 without taking the CPU, and
hogs that take it (a run they overlap is really slower); and the opposite, a worker served
first whatever else the host runs (other tests' load)."""

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

from workers.shared.processes import die_with_parent

# Shell loops, each a runnable task: load1 counts them however little CPU they get. At nice
# 19 and pinned to one CPU they barely slow anything else, yet each 5 s load1 update adds
# about BURNERS x 0.08 to it (a one-minute average).
BURNERS = 64
# The gate's threshold this far above the host's load when a test starts: it passes at
# first, and one update after the burners start, load1 is over it.
MARGIN = 3.0


@contextmanager
def burners(count: int) -> Iterator[None]:
    cpu = {max(os.sched_getaffinity(0))}
    with _loops(count, ["nice", "-n", "19"], lambda: os.sched_setaffinity(0, cpu)):
        yield


@contextmanager
def hogs(pids: list[int], count: int = 8) -> Iterator[None]:
    """These processes, and what they start from now on, pinned to one CPU for good, beside
    `count` busy loops there, each in a session of its own: the kernel shares a CPU between
    sessions (autogroups) before it shares it between their processes, so a run gets at most
    1/(count + 1) of that CPU whatever else the host is doing."""
    cpu = {max(os.sched_getaffinity(0))}
    for pid in pids:
        for thread in os.listdir(f"/proc/{pid}/task"):  # each thread has its own affinity
            os.sched_setaffinity(int(thread), cpu)
    with _loops(count, [], lambda: (os.setsid(), os.sched_setaffinity(0, cpu))):
        yield


@contextmanager
def _loops(count: int, prefix: list[str], setup: Callable[[], object]) -> Iterator[None]:
    def child() -> None:
        # Killed with the test's process: a test run stopped from outside (its `finally` never
        # runs) once left 128 loops spinning under the next run, which then failed 3 timing
        # tests.
        die_with_parent()
        setup()

    procs = [subprocess.Popen([*prefix, "sh", "-c", "while :; do :; done"], preexec_fn=child)
             for _ in range(count)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def favoured(pid: int) -> None:
    """`pid` and what it starts from now on served before other tests' work: the lowest
    real-time priority (SCHED_FIFO 1), which fork and exec keep, and the kernel's real-time
    throttling bounds (95 % of a CPU). Its commands run in sessions of their own, so a nicer
    autogroup would not reach them. A no-op where the kernel refuses (not root)."""
    with suppress(OSError):
        for thread in os.listdir(f"/proc/{pid}/task"):  # each thread has its own policy
            os.sched_setscheduler(int(thread), os.SCHED_FIFO, os.sched_param(1))
