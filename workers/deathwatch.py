"""A worker's commands end when it dies, SIGKILL included, where it has a cgroup for them
(Linux, workers/descendants.py): one small process, started with the worker, sleeps on the
worker's pidfd and, once the worker is gone, kills that cgroup, which holds every process a
command started from its first instant.

The kernel's parent-death signal would end each command's leader instead, but it is set
between fork and exec: from Python that makes subprocess fork the whole worker rather than
vfork it, and through a wrapper (`setpriv --pdeathsig`) it costs an exec (1.1 to 1.3 ms a
command). The watch costs one process per worker, asleep in poll(2) until the worker ends: it
wakes nothing while a command is measured. A worker without a watch (no cgroup, no pidfd, a
watch that would not start, a command run outside a worker) gives each command the signal.

The worker opens its own pidfd and hands it over, so the watch can never sleep on a process
that took a dead worker's number; the watch says it is ready on a pipe once it sleeps on it.
It runs this file as a script with the standard library only (`python -I -S`): it starts in
milliseconds and holds a few MiB.
"""

import contextlib
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

# How long a starting watch has to say it is ready (a Python start: tens of ms).
READY_S = 10.0
_SCRIPT = __file__

_watch: subprocess.Popen[bytes] | None = None
_cgroup: Path | None = None


def start(cgroup: Path | None) -> bool:
    """Watch this process from now on, to kill `cgroup` once it dies; False where it cannot
    (no cgroup, no pidfd, the watch would not start)."""
    global _cgroup
    if cgroup != _cgroup:  # a second worker in one process (tests): the watch follows the last
        stop()
        _cgroup = cgroup
    return ensure()


def ensure() -> bool:
    """Before each command: the watch is alive (started again if something ended it)."""
    global _watch
    if _cgroup is None:
        return False
    if _watch is not None and _watch.poll() is None:
        return True
    _watch = _started(_cgroup)
    return _watch is not None


def pid() -> int | None:
    return _watch.pid if _watch is not None and _watch.poll() is None else None


def stop() -> None:
    """The worker ends normally: nothing is running, so the watch has nothing left to do, and
    a command run after this gets the parent-death signal."""
    global _watch, _cgroup
    _cgroup = None
    if _watch is not None:
        _end(_watch)
        _watch = None


def _started(cgroup: Path) -> subprocess.Popen[bytes] | None:
    try:
        me = os.pidfd_open(os.getpid())  # refused by kernels before 5.3, or by seccomp
    except (AttributeError, OSError):
        return None
    ready, told = os.pipe()
    try:
        # Its own session: a Ctrl-C or a hangup at the worker's terminal, or a signal to the
        # worker's process group, leaves it to do its work once the worker is gone.
        watch = subprocess.Popen([sys.executable, "-I", "-S", _SCRIPT, str(me), str(told),
                                  str(cgroup)], env={}, pass_fds=(me, told),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
    except OSError:
        os.close(ready)
        return None
    finally:
        os.close(me)
        os.close(told)
    said = select.select([ready], [], [], READY_S)[0] and os.read(ready, 1) == b"1"
    os.close(ready)
    if not said:
        _end(watch)
        return None
    return watch


def _end(watch: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        watch.kill()
    watch.wait()


def main(argv: list[str]) -> None:
    worker, told, cgroup = int(argv[0]), int(argv[1]), Path(argv[2])
    for stop_signal in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop_signal, signal.SIG_IGN)  # only the worker's end ends the watch
    poller = select.poll()
    poller.register(worker, select.POLLIN)  # readable once the worker has exited
    os.write(told, b"1")
    os.close(told)
    poller.poll()
    with contextlib.suppress(OSError):
        if (cgroup / "cgroup.procs").read_text().split():
            (cgroup / "cgroup.kill").write_text("1")
            print(f"deathwatch: the worker died mid-command; killed its commands' cgroup "
                  f"{cgroup}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
