"""No orphans: every command's process group is written down while it runs, and a worker
sweeps the groups its predecessor left behind when it starts.

The parent-death signal (Linux) kills a command's leader when the worker dies; whatever the
leader started stays in its process group, which the next worker start kills. macOS has no
parent-death signal, so there the sweep at start is the only net.
"""

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from pathlib import Path

_PR_SET_PDEATHSIG = 1
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


def die_with_parent() -> None:
    """In the child, before exec: be killed when the worker dies (Linux only)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _read(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split() if line.isdigit()]
    except OSError:
        return []
