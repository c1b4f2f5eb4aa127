"""Every descendant of a command ends with it, a daemon in its own session too: the command
runs in a cgroup of its worker's, killed when it ends, where the host has a writable cgroup v2;
elsewhere on Linux the worker is a child subreaper that ends what it adopted.

A process group is not enough: `setsid` leaves it, and a daemon that inherited the host lease's
descriptor would hold the lease for ever. The worker's own cgroup is never killed: it steps
into the command's cgroup only for the spawn, so the child is born inside before it can fork.
A worker SIGKILLed mid-command has its cgroup killed by its watch (workers/deathwatch.py), and
by the worker of that name when it starts again, should the watch be gone too. Without
cgroups, the nets for that case are its supervisor (a subreaper too, deploy/supervise.py) and
the process groups the restart kills (workers/orphans.py).
"""

import contextlib
import hashlib
import os
import select
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from workers.shared import processes

# How long the processes a command left get to be gone once killed.
GONE_WITHIN_S = 5.0
# While a command is staged, how often the move's lock is taken again to keep it fast, and for
# how long at most (a gate's wait or a build outlasts it: the move then waits as before).
WARM_EVERY_S = 0.002
WARM_FOR_S = 0.5
# The lock stays quick for about 20 ms after a move (measured, Linux 6.18): a command staged
# sooner after the last one started needs no keeper (back-to-back short cells).
WARM_AFTER_S = 0.015


class _GroupsOnly:
    """macOS, or a worker not configured (tests that run a command alone): the command's
    process group is killed (workers/execute.py) and nothing more."""

    kind = "process group"

    def warm(self) -> None:
        pass

    @contextlib.contextmanager
    def born_inside(self) -> Iterator[None]:
        yield

    def end(self) -> int:
        return 0


class _Cgroup:
    """A cgroup v2 for the worker's commands, one command at a time (the solo pool)."""

    kind = "cgroup"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.keeper: Keeper | None = None
        self.moved = 0.0  # monotonic: when the worker last stepped out

    def warm(self) -> None:
        if time.monotonic() - self.moved < WARM_AFTER_S:
            return
        if self.keeper is None or not self.keeper.is_alive():
            home = own_cgroup()
            assert home is not None
            with contextlib.suppress(OSError):
                self.keeper = Keeper(home)
                self.keeper.start()

    @contextlib.contextmanager
    def born_inside(self) -> Iterator[None]:
        home = own_cgroup()
        assert home is not None
        if self.keeper is not None:  # gone before the worker moves: it would move it back
            self.keeper.stop()
            self.keeper = None
        _join(self.path)
        try:
            yield
        finally:
            _join(home)
            self.moved = time.monotonic()

    def end(self) -> int:
        """Kill every process in the cgroup and wait until it is empty; how many there were."""
        left = (self.path / "cgroup.procs").read_text().split()
        if left:
            (self.path / "cgroup.kill").write_text("1")
            self._until_empty()
        return len(left)

    def _until_empty(self) -> None:
        deadline = time.monotonic() + GONE_WITHIN_S
        fd = os.open(self.path / "cgroup.events", os.O_RDONLY)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLPRI)  # the kernel flags every change of the file
            while b"populated 1" in os.pread(fd, 4096, 0):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.path} still holds processes after cgroup.kill")
                poller.poll(left * 1000)
        finally:
            os.close(fd)


class Keeper(threading.Thread):
    """Keeps the kernel's lock for cgroup moves in its writers' fast state while a command is
    staged. The first move after an idle spell waits out an RCU grace period (5 to 9 ms on a
    kernel without cgroup2's `favordynmods`), and the state lasts only about one grace period
    after the last move: this thread moves the worker where it already is (nothing moves, the
    lock is taken) every WARM_EVERY_S, so the wait falls beside the staging, not before the
    command's exec. It ends before the command starts, and never runs while one does."""

    def __init__(self, home: Path) -> None:
        super().__init__(name="benchfleet-cgroup-warm", daemon=True)
        # Opened here: the thread's first call is the move itself, made while it still holds
        # the GIL it started with (any call before it could wait out the switch interval).
        self.fd = os.open(home / "cgroup.procs", os.O_WRONLY)
        self.stopped = threading.Event()

    def run(self) -> None:
        until = time.monotonic() + WARM_FOR_S
        pid = str(os.getpid()).encode()
        try:
            while not self.stopped.is_set() and time.monotonic() < until:
                os.write(self.fd, pid)
                self.stopped.wait(WARM_EVERY_S)
        except OSError:
            pass  # the move itself is made, and said to fail, where the command starts
        finally:
            os.close(self.fd)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


class _Subreaper(_GroupsOnly):
    """No writable cgroup: orphans of a command are re-parented to the worker, which kills
    every descendant it has once the command is done (it runs nothing else meanwhile)."""

    kind = "subreaper"

    def end(self) -> int:
        return processes.end_descendants(GONE_WITHIN_S)


_pen: _GroupsOnly | _Cgroup = _GroupsOnly()


def configure(identity: Path) -> tuple[str, int]:
    """Choose how this worker ends its commands' descendants; end those its predecessor of the
    same `identity` (its workspace and name) left. (how, how many were ended)."""
    global _pen
    if not processes.available():
        return _pen.kind, 0
    cgroup = _make_cgroup(identity)
    if cgroup is not None:
        _pen = _Cgroup(cgroup)
    else:
        processes.prctl(processes.CHILD_SUBREAPER, 1)
        _pen = _Subreaper()
    return _pen.kind, _pen.end()


def warm() -> None:
    """A command will start soon: make the move into its cgroup quick by then."""
    _pen.warm()


def born_inside() -> contextlib.AbstractContextManager[None]:
    """Around starting a command: it starts where its end can find all it leaves."""
    return _pen.born_inside()


def end() -> int:
    """After a command: end every process it left; how many there were."""
    return _pen.end()


def cgroup() -> Path | None:
    """The commands' cgroup, where this worker has one."""
    return _pen.path if isinstance(_pen, _Cgroup) else None


def close() -> None:
    """The worker stops: its commands' cgroup (empty by now) goes too."""
    if isinstance(_pen, _Cgroup):
        with contextlib.suppress(OSError):
            _pen.path.rmdir()


def _make_cgroup(identity: Path) -> Path | None:
    """A cgroup for this worker's commands, made under its own, or None where cgroup v2 is
    absent or read-only here, or cannot kill (cgroup.kill came with Linux 5.14)."""
    own, path = own_cgroup(), cgroup_path(identity)
    if own is None or path is None:
        return None
    try:
        path.mkdir(exist_ok=True)
    except OSError:
        return None
    movable = all(os.access(p / "cgroup.procs", os.W_OK) for p in (own, path))
    if movable and (path / "cgroup.kill").exists():
        return path
    with contextlib.suppress(OSError):
        path.rmdir()
    return None


def cgroup_path(identity: Path) -> Path | None:
    """Where the commands' cgroup of the worker of `identity` is (or would be) made."""
    own = own_cgroup()
    digest = hashlib.sha256(str(identity).encode()).hexdigest()[:10]
    return None if own is None else own / f"benchfleet-{identity.name}-{digest}"


@cache
def cgroup2_mount() -> Path | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return Path(fields[1])
    return None


def own_cgroup() -> Path | None:
    """This process's cgroup v2 directory ("0::/path" in /proc/self/cgroup)."""
    mount = cgroup2_mount()
    if mount is None:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return mount / line[3:].lstrip("/")
    return None


def _join(cgroup: Path) -> None:
    """Move the worker (all its threads) into `cgroup`; a failure is ours, not the command's."""
    try:
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as error:
        raise RuntimeError(f"cannot move the worker into {cgroup}: {error.strerror}") from error
