"""Run one command: output straight to files, a scrubbed environment, and a wait that blocks.

While the command runs the worker sleeps in one poll() on the child's pidfd (and, when given,
the socket a cancel arrives on): no pipes to pump, no timer, no wake-up until something
happens. A timeout kills the command's whole process group.
"""

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path
from typing import BinaryIO, Literal

from jobs.parsers.readings import RunOutput
from jobs.record.attempts import Run
from jobs.spec.recipes import Invocation
from workers import births, deathwatch, descendants, orphans
from workers.host_facts import load1
from workers.shared import processes
from workers.shared.clock import now
from workers.shared.parser_files import read_bounded
from workers.staging import take_spare

# How long a timed-out or cancelled command gets after SIGTERM before SIGKILL.
KILL_GRACE_S = 5.0
TIMEOUT_EXIT = 124
CANCEL_EXIT = 130
# Never inherited by a command unless its recipe names it in `pass_env`: the worker's Redis
# URL, keys and tokens stay with the worker. HOME and PATH stay (cargo, nvcc, JIT caches).
SECRET_ENV = ("BENCHFLEET_*", "*TOKEN*", "*KEY*", "*SECRET*", "*PASSWORD*", "*PASSWD*")
# The process groups of the commands running now, and whether a cold shutdown ended them all
# (workers/hooks/shutdown.py): from then on a command is killed as soon as it starts.
_running: set[int] = set()
_halted = False

Role = Literal["build", "probe", "warmup", "measure", "profile"]


@dataclass(frozen=True)
class Files:
    stdout: Path
    stderr: Path


@dataclass
class Command:
    """One command about to run; the hooks around it may add what the child inherits."""

    role: Role
    label: str
    call: Invocation
    cwd: Path
    files: Files
    base: Path
    pass_fds: list[int] = field(default_factory=list)
    # A descriptor that becomes readable when the command may have to stop, and the check
    # that says whether it must (a cancel for this cell).
    wake_fd: int | None = None
    should_stop: Callable[[], bool] | None = None
    host_lease: bool = False
    # Another sweep that held the host lease between this group's earlier commands and this
    # one (workers/hooks/host_lease.py): the group's arms were not measured back to back.
    other_sweep: str | None = None


class Stopped(Exception):
    """`should_stop` said so while this command ran; its process group is gone."""


def child_env(call: Invocation, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    kept = {k: v for k, v in env.items()
            if not _secret(k) or any(fnmatchcase(k, p) for p in call.pass_env)}
    return {**kept, **call.env}


def halt() -> None:
    """End every running command now and every later one as it starts: a cold shutdown.
    Safe in a signal handler: it only sends signals; `run` waits for the group as usual."""
    global _halted
    _halted = True
    for pgid in list(_running):
        _signal_group(pgid, signal.SIGKILL)


def run(command: Command) -> Run:
    """Run the command; raises Stopped when told to stop while it runs."""
    call, files = command.call, command.files
    before, started, t0 = load1(), now(), time.perf_counter()
    timed_out = stopped = False
    with _writing(files.stdout) as out, _writing(files.stderr) as err:
        env = child_env(call)
        # Watched, the command needs no parent-death signal (workers/deathwatch.py); else
        # setpriv sets it, and would exec the command itself: say here, as Popen would, what
        # cannot start.
        watched = deathwatch.ensure()
        prefix = () if watched or not _runnable(call.argv[0], command.cwd, env) \
            else orphans.pdeathsig_prefix()
        try:
            # After an idle spell the watch bears it inside its cgroup; else, or where the
            # watch cannot, the worker steps in for the spawn (workers/births.py says why).
            proc: subprocess.Popen[bytes] | births.Born | None = deathwatch.spawn(
                call.argv, str(command.cwd), env, (_devnull(), out.fileno(), err.fileno()),
                command.pass_fds) if watched and descendants.by_watch() else None
            if proc is None:
                with descendants.born_inside():
                    proc = subprocess.Popen([*prefix, *call.argv], cwd=command.cwd, env=env,
                                            stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            start_new_session=True, pass_fds=command.pass_fds,
                                            preexec_fn=None if watched or prefix
                                            else processes.die_with_parent)
        except OSError as error:
            err.write(f"cannot start {call.argv[0]}: {error.strerror}\n".encode())
            code = 127
        else:
            descendants.started()
            orphans.started(proc.pid)
            _running.add(proc.pid)
            if _halted:  # halted while it started: the handler could not see this group yet
                _signal_group(proc.pid, signal.SIGKILL)
            try:
                code, timed_out, stopped = _wait(proc, command)
            finally:
                _kill_group(proc.pid)
                descendants.end()  # what left the group: a daemon in its own session
                _running.discard(proc.pid)
                orphans.ended(proc.pid)
    if stopped:
        raise Stopped(f"stopped while {command.label} ran")
    wall = time.perf_counter() - t0
    return Run(role=command.role, argv=call.argv, env=call.env, cwd=str(command.cwd),
               exit_code=_shell_code(code), timed_out=timed_out, wall_s=round(wall, 6),
               started=started, ended=now(), load1_before=before, load1_after=load1(),
               stdout=str(files.stdout.relative_to(command.base)),
               stderr=str(files.stderr.relative_to(command.base)),
               host_lease=command.host_lease, other_sweep=command.other_sweep)


def _writing(path: Path) -> BinaryIO:
    """`path` open for a command's output. A spare file renamed there (workers/staging.py) is
    empty and opened as it is: emptying it again would have ext4 write the output back at
    close (`auto_da_alloc`), inside the run's wall time. Else as open(path, "wb")."""
    if take_spare(path):
        return open(os.open(path, os.O_WRONLY), "wb")  # the caller closes it
    return path.open("wb")


def output(run: Run, base: Path, timeout_s: float) -> RunOutput:
    """A finished run as its parser reads it (bounded; undecodable bytes replaced)."""
    return RunOutput(stdout=read_bounded(base / run.stdout), stderr=read_bounded(base / run.stderr),
                     exit_code=run.exit_code, timed_out=run.timed_out, timeout_s=timeout_s)


def _wait(proc: "subprocess.Popen[bytes] | births.Born", command: Command
          ) -> tuple[int, bool, bool]:
    """(exit code, timed out, stopped): blocks until the child exits, the timeout passes,
    or `should_stop` says so when the wake descriptor stirs."""
    deadline = time.monotonic() + command.call.timeout_s
    with _exit_watch(proc.pid) as watch:
        wake = command.wake_fd
        while True:
            ready = watch.wait(max(deadline - time.monotonic(), 0.0), wake)
            if ready == "exited":
                return proc.wait(), False, False
            if ready == "timeout":
                return _stop(proc), True, False
            if command.should_stop and command.should_stop():
                return _stop(proc), False, True
            if ready == "gone" or command.should_stop is None:
                wake = None  # the wake socket closed (Redis went away): wait on the child


def _stop(proc: "subprocess.Popen[bytes] | births.Born") -> int:
    """SIGTERM the group, then SIGKILL after a grace period; the leader's exit code."""
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
    return TIMEOUT_EXIT


class _PollWatch:
    """Linux: the child's pidfd and the wake descriptor in one poll()."""

    def __init__(self, pid: int) -> None:
        self.fd = os.pidfd_open(pid)

    def wait(self, timeout_s: float, wake: int | None) -> str:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if wake is not None:
            poller.register(wake, select.POLLIN | select.POLLHUP | select.POLLERR)
        events = poller.poll(timeout_s * 1000)
        if not events:
            return "timeout"
        if any(fd == self.fd for fd, _ in events):
            return "exited"
        gone = select.POLLHUP | select.POLLERR | select.POLLNVAL
        return "gone" if any(ev & gone for _, ev in events) else "woken"

    def close(self) -> None:
        os.close(self.fd)


class _KqueueWatch:
    """macOS and the BSDs: a kqueue with the child's exit and the wake descriptor."""

    def __init__(self, pid: int) -> None:
        self.kq = select.kqueue()
        self.pid = pid
        self.kq.control([select.kevent(pid, select.KQ_FILTER_PROC, select.KQ_EV_ADD,
                                       select.KQ_NOTE_EXIT)], 0)

    def wait(self, timeout_s: float, wake: int | None) -> str:
        changes = ([select.kevent(wake, select.KQ_FILTER_READ, select.KQ_EV_ADD)]
                   if wake is not None else [])
        events = self.kq.control(changes, 2, timeout_s)
        if not events:
            return "timeout"
        if any(e.filter == select.KQ_FILTER_PROC for e in events):
            return "exited"
        return "gone" if any(e.flags & select.KQ_EV_EOF for e in events) else "woken"

    def close(self) -> None:
        self.kq.close()


@contextlib.contextmanager
def _exit_watch(pid: int):  # type: ignore[no-untyped-def]
    watch = _PollWatch(pid) if hasattr(os, "pidfd_open") else _KqueueWatch(pid)
    try:
        yield watch
    finally:
        watch.close()


def _kill_group(pgid: int) -> None:
    """Kill what the command left in its process group and wait until it is gone, so
    nothing of it runs on into the next measurement."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return  # the usual case: the command left nothing behind
    pids = _group_members(pgid)
    _signal_group(pgid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(OSError):
            fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
            if fd is not None:
                select.select([fd], [], [], KILL_GRACE_S)  # readable when the process is gone
                os.close(fd)


def _group_members(pgid: int) -> list[int]:
    if not sys.platform.startswith("linux"):
        return []
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(entry.path, "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
                    members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _runnable(program: str, cwd: Path, env: dict[str, str]) -> bool:
    if os.sep in program:
        return os.access(cwd / program, os.X_OK)
    return shutil.which(program, path=env.get("PATH")) is not None


@cache  # one descriptor of /dev/null, the stdin of every command the watch starts
def _devnull() -> int:
    return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # as Popen's DEVNULL


@cache  # a pure test of a name against constants: the worker's environment asks it per command
def _secret(name: str) -> bool:
    upper = name.upper()
    return any(fnmatchcase(upper, p) for p in SECRET_ENV)


def _shell_code(code: int) -> int:
    """Killed by signal N reads as 128 + N, as a shell reports it (SIGKILL = 137)."""
    return 128 - code if code < 0 else code
