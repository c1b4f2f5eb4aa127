"""No orphans: every command's process group is written down while it runs, and a worker
sweeps the groups its predecessor left behind when it starts.

Where the worker has a cgroup for its commands, its watch (workers/deathwatch.py) kills them
the moment it dies. Elsewhere on Linux the parent-death signal kills a command's leader when
the worker dies; whatever the leader started stays in its process group, which the next worker
start kills. macOS has no parent-death signal, so there the sweep at start is the only net.
"""

import contextlib
import os
import shutil
import signal
import sys
from functools import cache
from pathlib import Path

_registry: Path | None = None


def configure(path: Path) -> list[int]:
    """Use `path` for this worker's process groups; kill and return what it already lists."""
    global _registry
    path.parent.mkdir(parents=True, exist_ok=True)
    left = _read(path)
    for pgid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    path.write_text("")
    _registry = path
    return left


def started(pgid: int) -> None:
    if _registry is not None:
        with _registry.open("a") as f:
            f.write(f"{pgid}\n")


def ended(pgid: int) -> None:
    if _registry is not None:
        _registry.write_text("".join(f"{p}\n" for p in _read(_registry) if p != pgid))


@cache
def pdeathsig_prefix() -> tuple[str, ...]:
    """util-linux's `setpriv --pdeathsig KILL`, put before a command, sets the parent-death
    signal and execs it: the worker then starts commands with vfork. A `preexec_fn` would do
    the same from Python, but makes subprocess fork the whole worker (about 1.5 ms a command
    here). Empty where setpriv is missing (the caller falls back to the preexec_fn) or on
    macOS (no such signal)."""
    if not sys.platform.startswith("linux"):
        return ()
    found = shutil.which("setpriv")
    return (found, "--pdeathsig", "KILL", "--") if found else ()


def _read(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split() if line.isdigit()]
    except OSError:
        return []
