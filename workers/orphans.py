"""No orphans: every command's process group is written down while it runs, and a worker
sweeps the groups its predecessor left behind when it starts.

When the worker dies, its watch (workers/deathwatch.py, Linux) kills the groups listed here at
once; the next worker start kills them too, for a worker whose watch was gone with it. macOS
has neither the watch nor a parent-death signal, so there the sweep at start is the only net.
"""

import contextlib
import os
import signal
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


def _read(path: Path) -> list[int]:
    try:
        return [int(line) for line in path.read_text().split() if line.isdigit()]
    except OSError:
        return []
