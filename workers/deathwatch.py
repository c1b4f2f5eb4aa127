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
milliseconds and holds some 14 MiB (8 of its own, the rest the interpreter's shared files).

The watch also starts the first command after an idle spell, born inside the cgroup
(workers/births.py): it wakes for that request, before the command, and sleeps on while the
command runs.
"""

import contextlib
import errno
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

try:
    from workers import births
except ImportError:  # the watch itself, run as a script (python -I -S): births.py is beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import births  # type: ignore[no-redef,import-not-found]

# How long a starting watch has to say it is ready (a Python start: tens of ms).
READY_S = 10.0
_SCRIPT = __file__

_watch: subprocess.Popen[bytes] | None = None
_cgroup: Path | None = None
_line: socket.socket | None = None  # the worker's end of the watch's socket (workers/births.py)
_births = True  # until the watch refuses a clone into this cgroup


def start(cgroup: Path | None) -> bool:
    """Watch this process from now on, to kill `cgroup` once it dies; False where it cannot
    (no cgroup, no pidfd, the watch would not start)."""
    global _cgroup, _births
    if cgroup != _cgroup:  # a second worker in one process (tests): the watch follows the last
        stop()
        _cgroup, _births = cgroup, True
    return ensure()


def ensure() -> bool:
    """Before each command: the watch is alive (started again if something ended it)."""
    global _watch, _line
    if _cgroup is None:
        return False
    if _watch is not None and _watch.poll() is None:
        if _line is not None:
            return True
        _end(_watch)  # its line was cut mid-request: a fresh watch, whose answers are all ours
    _close_line()
    _watch, _line = _started(_cgroup) or (None, None)
    return _watch is not None


def bears() -> bool:
    """Whether the watch starts this worker's commands (workers/births.py), as far as known."""
    return _births and _line is not None and _watch is not None and _watch.poll() is None


def spawn(argv: list[str], cwd: str, env: dict[str, str], stdio: tuple[int, int, int],
          pass_fds: list[int]) -> births.Born | None:
    """The command started by the watch, born inside the commands' cgroup; None where the
    watch does not start commands (the caller moves into the cgroup for the spawn). Raises
    OSError, as Popen does, for a command that cannot start."""
    global _births
    if not ensure() or not _births or _line is None:
        return None
    try:
        return births.spawn(_line, argv, cwd, env, stdio, pass_fds)
    except births.Refused as refused:
        # A watch that died unanswering of SIGSYS met a seccomp filter that kills clone3's
        # callers: so would every watch after it.
        lasting = refused.lasting or refused.errno == errno.EPIPE and _died_of(signal.SIGSYS)
        _births = _births and not lasting
        return None
    except (births.NotStarted, ValueError):  # the command's own fault; the line is in step
        raise
    except BaseException:  # interrupted before the answer, which the next request would read
        _close_line()
        raise


def _died_of(sig: int) -> bool:
    try:
        return _watch is not None and _watch.wait(1.0) == -sig
    except subprocess.TimeoutExpired:
        return False


def pid() -> int | None:
    return _watch.pid if _watch is not None and _watch.poll() is None else None


def stop() -> None:
    """The worker ends normally: nothing is running, so the watch has nothing left to do, and
    a command run after this gets the parent-death signal."""
    global _watch, _cgroup
    _cgroup = None
    _close_line()
    if _watch is not None:
        _end(_watch)
        _watch = None


def _close_line() -> None:
    global _line
    if _line is not None:
        _line.close()
        _line = None


def _started(cgroup: Path) -> tuple[subprocess.Popen[bytes], socket.socket] | None:
    try:
        me = os.pidfd_open(os.getpid())  # refused by kernels before 5.3, or by seccomp
    except (AttributeError, OSError):
        return None
    ready, told = os.pipe()
    line, its_line = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        # Its own session: a Ctrl-C or a hangup at the worker's terminal, or a signal to the
        # worker's process group, leaves it to do its work once the worker is gone.
        watch = subprocess.Popen([sys.executable, "-I", "-S", _SCRIPT, str(me), str(told),
                                  str(cgroup), str(its_line.fileno())], env={},
                                 pass_fds=(me, told, its_line.fileno()),
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 start_new_session=True)
    except OSError:
        os.close(ready)
        line.close()
        return None
    finally:
        os.close(me)
        os.close(told)
        its_line.close()
    said = select.select([ready], [], [], READY_S)[0] and os.read(ready, 1) == b"1"
    os.close(ready)
    if not said:
        _end(watch)
        line.close()
        return None
    return watch, line


def _end(watch: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        watch.kill()
    watch.wait()


def main(argv: list[str]) -> None:
    worker, told, cgroup, line = int(argv[0]), int(argv[1]), Path(argv[2]), int(argv[3])
    for stop_signal in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop_signal, signal.SIG_IGN)  # only the worker's end ends the watch
    poller = select.poll()
    poller.register(worker, select.POLLIN)  # readable once the worker has exited
    requests = socket.socket(fileno=line)
    poller.register(requests, select.POLLIN)  # the worker's commands to start
    try:
        into = os.open(cgroup, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        into = -1  # every clone is refused: the worker moves for its spawns
    os.write(told, b"1")
    os.close(told)
    while worker not in (fd for fd, _ in poller.poll()):
        if not births.serve(requests, into):
            poller.unregister(requests)  # the worker closed its end: only its exit is left
    with contextlib.suppress(OSError):
        if (cgroup / "cgroup.procs").read_text().split():
            (cgroup / "cgroup.kill").write_text("1")
            print(f"deathwatch: the worker died mid-command; killed its commands' cgroup "
                  f"{cgroup}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
