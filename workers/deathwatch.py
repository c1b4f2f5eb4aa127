"""A worker's commands end when it dies, SIGKILL included (Linux): one small process, started
with the worker, sleeps on the worker's pidfd and, once the worker is gone, kills the process
groups it had running (workers/orphans.py's list) and its commands' cgroup.

The kernel's parent-death signal would do the same for each command, but it is set between
fork and exec: from Python that makes subprocess fork the whole worker rather than vfork it
(about 1.4 ms a command), and through a wrapper (`setpriv --pdeathsig`) it costs an exec (1.3
ms). The watch costs one process per worker, asleep in poll(2) until the worker ends: it wakes
nothing while a command is measured. Where there is no watch (macOS, a command run without a
worker, a watch that would not start), a command gets the parent-death signal as before.

The process runs this file as a script with the standard library only (`python -I -S`): it
imports nothing of the worker's, so it starts in milliseconds and holds a few MiB.
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

_watch: subprocess.Popen[bytes] | None = None
_args: list[str] = []


def start(registry: Path, cgroup: Path | None) -> bool:
    """Watch this process from now on; False where this host cannot (no pidfd: not Linux 5.3+)."""
    if not hasattr(os, "pidfd_open"):
        return False
    args = [str(os.getpid()), str(registry), str(cgroup or "")]
    if args != _args:  # a second worker in one process (tests): the watch follows the last
        stop()
        _args.extend(args)
    return ensure()


def ensure() -> bool:
    """Before each command: the watch is alive (started again if something ended it)."""
    global _watch
    if not _args:
        return False
    if _watch is not None and _watch.poll() is None:
        return True
    try:
        # Its own session: a Ctrl-C at the worker's terminal, or a signal to the worker's
        # process group, leaves it to do its work once the worker is gone.
        _watch = subprocess.Popen([sys.executable, "-I", "-S", __file__, *_args], env={},
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        _watch = None
        return False
    return True


def pid() -> int | None:
    """The watch's process, which a subreaper worker spares when it ends its descendants."""
    return _watch.pid if _watch is not None and _watch.poll() is None else None


def stop() -> None:
    """The worker ends normally: nothing is running, so the watch has nothing left to do, and
    a command run after this gets the parent-death signal."""
    global _watch
    _args.clear()
    if _watch is not None:
        with contextlib.suppress(ProcessLookupError):
            _watch.kill()
        _watch.wait()
        _watch = None


def _watch_until_gone(worker: int) -> None:
    try:
        fd = os.pidfd_open(worker)
    except ProcessLookupError:
        return  # gone already
    poller = select.poll()
    poller.register(fd, select.POLLIN)  # readable once the process has exited
    poller.poll()


def _end(registry: Path, cgroup: str) -> list[int]:
    """Kill every process group the dead worker listed, then its commands' cgroup (what left
    the groups: a daemon in its own session). The groups killed."""
    try:
        pgids = [int(line) for line in registry.read_text().split() if line.isdigit()]
    except OSError:
        pgids = []
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if cgroup:
        with contextlib.suppress(OSError):
            Path(cgroup, "cgroup.kill").write_text("1")
    return pgids


def main(argv: list[str]) -> None:
    worker, registry, cgroup = int(argv[0]), Path(argv[1]), argv[2]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _watch_until_gone(worker)
    if killed := _end(registry, cgroup):
        print(f"deathwatch: worker {worker} died; killed its process groups {killed}",
              file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
