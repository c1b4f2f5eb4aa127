"""Every descendant of a command ends with it, a daemon in its own session too: the command
runs in a cgroup of its worker's, killed when it ends, where the host has a writable cgroup v2;
elsewhere on Linux the worker is a child subreaper that ends what it adopted.

A process group is not enough: `setsid` leaves it, and a daemon that inherited the host lease's
descriptor would hold the lease for ever. The worker's own cgroup is never killed: its watch
starts the first command after an idle spell inside the commands' cgroup (workers/births.py),
and for the others the worker steps in only for the spawn; either way the child is born inside
before it can fork.
A worker SIGKILLed mid-command has its cgroup killed by its watch (workers/deathwatch.py), and
by the worker of that name when it starts again, should the watch be gone too. Without
cgroups, the nets for that case are its supervisor (a subreaper too, deploy/supervise.py) and
the process groups the restart kills (workers/orphans.py).
"""

import contextlib
import hashlib
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from workers import deathwatch
from workers.shared import processes

# How long the processes a command left get to be gone once killed.
GONE_WITHIN_S = 5.0
# While they go, how often the cgroup's processes are read and killed again (a fork between
# the reading and the kill, a process not yet gone).
KILL_AGAIN_S = 0.01
# While a command is staged, how often the keeper takes the move's lock again to keep it quick,
# and for how long at most since it was last asked (a checkout outlasts it: the move then
# waits as before).
KEEP_EVERY_S = 0.002
KEEP_FOR_S = 0.5
# The lock stays quick for at least 12 ms after a move, not always for 20 (tests/bench/floors.py,
# Linux 6.18): a command staged sooner after the last one started needs no keeper
# (back-to-back short cells).
QUICK_AFTER_MOVE_S = 0.015
# A command that follows the last one's start by more than this is the first after an idle
# spell: the watch bears it inside (workers/births.py), which waits out no grace period. Sooner,
# cells come back to back, and a move the last one (or the keeper) keeps quick costs a third of
# a birth (docs/benchmarks/overhead-profiles.md).
IDLE_AFTER_S = 0.1


class _GroupsOnly:
    """macOS, or a worker not configured (tests that run a command alone): the command's
    process group is killed (workers/execute.py) and nothing more."""

    kind = "process group"

    def warm(self) -> None:
        pass

    def rest(self) -> bool:
        return False

    @contextlib.contextmanager
    def born_inside(self) -> Iterator[None]:
        yield

    def by_watch(self) -> bool:
        return False

    def started(self) -> None:
        pass

    def end(self) -> int:
        return 0


class _Cgroup:
    """A cgroup v2 for the worker's commands, one command at a time (the solo pool). Called
    from the worker's main thread only: the keeper is the one other thread that moves it."""

    kind = "cgroup"

    def __init__(self, path: Path, home: Path) -> None:
        self.path, self.home = path, home
        self.keeper: Keeper | None = None
        self.moved = 0.0  # monotonic: when the worker last stepped out
        self.last = 0.0  # monotonic: when its last command started, moved into or born inside
        self.inside = False  # between its step in and out: a keeper would move it back out

    def warm(self) -> None:
        """A keeper from now until the command starts, where the move would be slow and the
        watch will not bear the command instead. It only makes the move quicker: a keeper the
        host refuses leaves the move as it was."""
        if self.inside or self._quick() or self._idle() and deathwatch.bears():
            return
        if self.keeper is not None and self.keeper.is_alive():
            self.keeper.extend()
            return
        try:
            keeper = Keeper(self.home)
        except OSError:
            return
        self.keeper = keeper  # before it starts: whatever interrupts, rest() can stop it
        try:
            keeper.start()
        except RuntimeError:  # no thread to be had: close what it opened
            self.keeper = None
            os.close(keeper.fd)

    def rest(self) -> bool:
        """No keeper from now on; whether one was keeping the lock."""
        keeper, self.keeper = self.keeper, None
        if keeper is None or not keeper.is_alive():
            return False
        keeper.stop()
        return True

    def by_watch(self) -> bool:
        """Whether the next command is better born inside by the watch than moved into: the
        move would be slow, and no keeper is making it quick."""
        return not self._quick() and self._idle() and \
            (self.keeper is None or not self.keeper.is_alive())

    def started(self) -> None:
        self.last = time.monotonic()

    def _quick(self) -> bool:
        return time.monotonic() - self.moved < QUICK_AFTER_MOVE_S

    def _idle(self) -> bool:
        return time.monotonic() - self.last >= IDLE_AFTER_S

    @contextlib.contextmanager
    def born_inside(self) -> Iterator[None]:
        # The keeper gone before the step in: it would move the worker back out, and the
        # command be born outside. Its join pays what is left of a grace period it waits out.
        self.rest()
        _join(self.path)
        self.inside = True
        try:
            yield
        finally:
            self.inside = False
            _join(self.home)
            self.moved = time.monotonic()

    def end(self) -> int:
        """Kill every process in the cgroup and wait until it is empty; how many there were.
        Each by its pid, again until none is left (a fork between reading and killing shows
        on the next reading), not by cgroup.kill: Linux (6.18 among others) then kills every
        child born into the cgroup later with CLONE_INTO_CGROUP at once, since its kill
        count no longer matches the watch's cgroup's."""
        left = (self.path / "cgroup.procs").read_text().split()
        if left:
            self._until_empty()
        return len(left)

    def renew(self) -> None:
        """The commands' cgroup made afresh, where the last worker of this name left it (its
        watch may have killed it: see end()). Empty by now; where it cannot go, it stays."""
        with contextlib.suppress(OSError):
            self.path.rmdir()
            self.path.mkdir()

    def _until_empty(self) -> None:
        deadline = time.monotonic() + GONE_WITHIN_S
        fd = os.open(self.path / "cgroup.events", os.O_RDONLY)
        try:
            poller = select.poll()
            poller.register(fd, select.POLLPRI)  # the kernel flags every change of the file
            while b"populated 1" in os.pread(fd, 4096, 0):
                for pid in (self.path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.path} still holds processes after SIGKILL")
                poller.poll(min(left, KILL_AGAIN_S) * 1000)
        finally:
            os.close(fd)


class Keeper(threading.Thread):
    """Keeps the kernel's lock for cgroup moves in its writers' fast state while a command is
    staged. The first move after an idle spell waits out an RCU grace period (5 to 9 ms on a
    kernel without cgroup2's `favordynmods`), and the state lasts only some 12 to 20 ms after
    the last move: this thread moves the worker where it already is (nothing moves, the lock is
    taken) every KEEP_EVERY_S, so the wait falls beside the staging, not before the command's
    exec. Each such move costs the host what the worker's own step in does: its forks and
    exits take the lock's slow path meanwhile (what `favordynmods` makes permanent). It ends
    before the command starts, never runs while one does, and rests while the worker waits
    (`resting`), when another worker's command may be measured. It does run while the
    worker stages a cell, which another worker's measured command may overlap."""

    def __init__(self, home: Path) -> None:
        super().__init__(name="benchfleet-cgroup-keeper", daemon=True)
        # Opened here, so no call of the thread's releases the GIL before its first move (it
        # could wait out the switch interval to get it back).
        self.fd = os.open(home / "cgroup.procs", os.O_WRONLY)
        self.stopped = threading.Event()
        self.until = time.monotonic() + KEEP_FOR_S

    def extend(self) -> None:
        self.until = time.monotonic() + KEEP_FOR_S

    def run(self) -> None:
        pid = str(os.getpid()).encode()
        try:
            while not self.stopped.is_set() and time.monotonic() < self.until:
                os.write(self.fd, pid)
                self.stopped.wait(KEEP_EVERY_S)
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
    _pen.rest()
    cgroup, home = _make_cgroup(identity), own_cgroup()
    if cgroup is not None and home is not None:
        _pen = _Cgroup(cgroup, home)
        ended = _pen.end()
        _pen.renew()
        return _pen.kind, ended
    processes.prctl(processes.CHILD_SUBREAPER, 1)
    _pen = _Subreaper()
    return _pen.kind, _pen.end()


def warm() -> None:
    """A command will start soon: make the move into its cgroup quick by then."""
    _pen.warm()


@contextlib.contextmanager
def resting() -> Iterator[None]:
    """Around a wait before a command (the idle gate, the host lease, a GPU's settle): no
    keeper while this worker waits, since another's command may be measured meanwhile; it
    keeps the lock again afterwards, for the rest of the way to the command, unless the wait
    raised (then no command follows soon)."""
    kept = _pen.rest()
    yield
    if kept:
        _pen.warm()


def rest() -> None:
    """No command follows soon after all (a cell that ended before it ran one)."""
    _pen.rest()


def born_inside() -> contextlib.AbstractContextManager[None]:
    """Around starting a command: it starts where its end can find all it leaves."""
    return _pen.born_inside()


def by_watch() -> bool:
    """Whether to ask the watch to bear the next command inside its cgroup (workers/births.py)
    rather than step in for the spawn: the first command after an idle spell."""
    return _pen.by_watch()


def started() -> None:
    """A command has just started, either way."""
    _pen.started()


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
