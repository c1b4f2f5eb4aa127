"""Linux processes as prctl(2) and /proc show them, for the worker and its supervisor: the
flags they set on themselves, and ending every descendant a process has."""

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from functools import cache
from pathlib import Path

PDEATHSIG = 1  # PR_SET_PDEATHSIG: this signal when the parent dies
DUMPABLE = 4  # PR_SET_DUMPABLE: 0 closes /proc/PID/environ and mem to the same user
CHILD_SUBREAPER = 36  # PR_SET_CHILD_SUBREAPER: orphaned descendants become our children


def available() -> bool:
    return sys.platform.startswith("linux")


def prctl(option: int, value: int) -> None:
    """Set one flag of this process; raises OSError where the kernel refuses."""
    if _libc().prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def die_with_parent() -> None:
    """In a child, before it execs or works: be killed when its parent dies (Linux only)."""
    if available():
        prctl(PDEATHSIG, signal.SIGKILL)


def end_descendants(within_s: float) -> int:
    """Kill every descendant of this process (a child subreaper) and reap them; how many.
    Only for a process that knows none of them is its own work in flight."""
    ended: set[int] = set()
    deadline = time.monotonic() + within_s
    # A killed parent's children come to us next: ask until none is left.
    while found := descendants(os.getpid()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {sorted(found)} outlive their kill")
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in _children(os.getpid()):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        ended |= found
    return len(ended)


def descendants(root: int) -> set[int]:
    """Every process descended from `root`, as /proc says now."""
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {child for pid in frontier for child in _children(pid)} - found
        found |= frontier
    return found


def _children(pid: int) -> set[int]:
    """From /proc/PID/task/*/children, which reads a process's own subtree only (CONFIG_
    PROC_CHILDREN); where the kernel lacks it, from every process's /proc/PID/stat."""
    try:
        lists = [task / "children" for task in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return set()  # gone meanwhile
    if lists and not lists[0].exists():
        return {child for child, parent in _parents().items() if parent == pid}
    children: set[int] = set()
    for path in lists:
        with contextlib.suppress(OSError):
            children |= {int(child) for child in path.read_text().split()}
    return children


def _parents() -> dict[int, int]:
    """Every process's parent, from /proc/PID/stat (its fourth field)."""
    parents = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(entry.path, "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return parents


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
