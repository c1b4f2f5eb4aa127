"""A command born inside its cgroup: the worker's watch (workers/deathwatch.py) starts it with
clone3(2), CLONE_INTO_CGROUP and CLONE_PARENT, so it is the worker's child from its first
instant and inside the commands' cgroup, and the worker never moves.

Why: stepping the worker into the cgroup for the spawn is a cgroup move, and on a kernel
without cgroup2's `favordynmods` the first move after an idle spell waits out an RCU grace
period (6 to 15 ms on the benchmark's machine) right before the exec. A child born into a
cgroup takes the same lock's reader side, which has no such wait. Python has no clone3, and
the worker cannot fork itself by hand safely (another thread may hold a lock the child needs,
and copying its 90 MiB costs 4 ms); the watch is small and single-threaded, so it can.

Only the first command after an idle spell is born so (workers/descendants.py: IDLE_AFTER_S):
a birth costs more than a move the last one kept quick, so back-to-back cells still move. A
birth has no grace period of its own, though it can queue behind another process's cgroup
change (both take the kernel's cgroup_mutex). Linux (6.18 among others) kills a child born into
a cgroup that was ever killed through cgroup.kill, since it compares the cgroup's kill count
with the one of the watch's cgroup: the worker never kills the commands' cgroup that way
(descendants.end), and where a birth dies so all the same, it moves from then on.

Stdlib only: the watch runs it with `python -I -S`. Both halves are here: `spawn` (the worker)
sends the command, its descriptors and a pipe over the watch's socket; `serve` (the watch)
starts it and answers with its pid or the clone's errno. The child writes its pid on the pipe
first, then the errno of an exec that failed, which the worker raises as Popen would; the
exec closes the pipe. The command gets what Popen gives: its descriptors, directory,
environment, session, signal dispositions (the default, but what the worker ignores stays
ignored: a worker under nohup passes SIGHUP on ignored), and the worker's CPUs, scheduling
policy and nice value as they are at the spawn (a test pins a worker to one CPU beside busy
loops, or raises its priority, while it runs). The rest of its state is the watch's, as it was
when the watch started (with the worker, or again after a watch died): umask, resource limits, I/O
priority, OOM score (the worker changes none of them later).
"""

import ctypes
import errno as errnos
import fcntl
import functools
import json
import os
import select
import signal
import socket
import subprocess
from dataclasses import dataclass

SYS_CLONE3 = 435  # on x86-64 and arm64 alike (the generic table); alpha and mips differ
CLONE_PARENT = 0x8000
CLONE_INTO_CGROUP = 0x200000000
MAX_FDS = 64
MAX_REQUEST = 1 << 20  # what the watch reads; the socket's buffer (some 208 KiB) refuses less


# Refusals of a clone that may pass (no pid or memory to spare now): the next idle command
# asks the watch again. Any other (ENOSYS, EPERM from seccomp, EINVAL) stands for the worker's
# life.
TRANSIENT = frozenset({errnos.EAGAIN, errnos.ENOMEM, errnos.EMFILE, errnos.ENFILE,
                       errnos.EINTR, errnos.EPIPE})


class NotStarted(OSError):
    """The command could not start (its exec or its directory failed), as Popen raises it."""


class Refused(Exception):
    """The host will not start a child this way (a kernel before 5.7, seccomp, a cgroup the
    watch cannot clone into, a request too large for the socket): nothing was started, and
    the worker moves into the cgroup for the spawn instead. `lasting`: the watch refused,
    and will again."""

    def __init__(self, why: str, lasting: bool, errno: int | None = None) -> None:
        super().__init__(why)
        self.lasting, self.errno = lasting, errno  # EPIPE: the watch died unanswering


@dataclass
class Born:
    """A command the watch started: the worker's child, waited on as a Popen is."""

    pid: int
    args: list[str]
    returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if timeout is not None and not _exits_within(self.pid, timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped by another (SIGCHLD ignored): as Popen, read 0
            self.returncode = 0
        else:
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


# Reset to their default in Popen's child (restore_signals); Python ignores both itself.
_RESTORED = {signal.SIGPIPE, signal.SIGXFSZ}
# What signal.signal may set: not the C library's own (32 and 33 under glibc), which only a
# parent of another C library could have left ignored.
_SETTABLE = frozenset(map(int, signal.valid_signals())) - {signal.SIGKILL, signal.SIGSTOP}


def spawn(line: socket.socket, argv: list[str], cwd: str, env: dict[str, str],
          stdio: tuple[int, int, int], pass_fds: list[int]) -> Born:
    """Start `argv` through the watch on `line`, in its own session, with `stdio` as its
    descriptors 0 to 2 and `pass_fds` at their own numbers. Raises NotStarted (an OSError) or
    ValueError as Popen would raise them when it cannot start, Refused when nothing started
    and the worker should spawn it itself."""
    if any("\0" in part for part in (*argv, *env, *env.values())):
        raise ValueError("embedded null byte")  # as Popen says it
    if len(pass_fds) + 4 > MAX_FDS:
        raise Refused(f"more than {MAX_FDS - 4} descriptors to pass", lasting=False)
    request = {"argv": argv, "cwd": cwd, "env": env, "to": [0, 1, 2, *pass_fds],
               "exe": _candidates(argv[0], env), "ignored": sorted(ignored())}
    # The child, not the watch, says on this pipe its pid, then the errno of a failed exec:
    # the worker hears of the exec from the child itself, one hop sooner, and knows a
    # command started even if the watch dies before it answers.
    told, tell = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            socket.send_fds(line, [json.dumps(request).encode()], [*stdio, *pass_fds, tell])
        except OSError as error:  # EMSGSIZE: an environment beyond the socket's buffer
            raise Refused(f"cannot ask the watch: {error.strerror}", lasting=False) from error
        finally:
            os.close(tell)
        heard = _read_all(told).split()  # EOF once the exec closed it, or the child exited
        reply = _answer(line)  # read always, so that no later request reads this one's
    finally:
        os.close(told)
    if not heard and "pid" in reply:  # born, and killed before its first step: see below
        Born(reply["pid"], argv).wait()  # reaped here, as its parent
        raise Refused("the kernel killed the command as it was born", lasting=True)
    if not heard:  # no child: the watch refused the clone, or died before it
        refused = reply.get("refused", errnos.EPIPE)
        raise Refused(f"clone3: {os.strerror(refused)}", refused not in TRANSIENT, refused)
    born = Born(int(heard[0]), argv)
    if len(heard) > 1:
        born.wait()  # it exited at once; reaped here, as its parent
        code = int(heard[1])
        if code < 0:  # not the command's fault: the worker starts it itself
            raise Refused(f"cannot give the command the worker's scheduling: "
                          f"{os.strerror(-code)}", lasting=False)
        raise NotStarted(code, os.strerror(code), argv[0])
    return born


def serve(line: socket.socket, cgroup: int) -> bool:
    """One request from the worker, answered; False once the worker has closed its end."""
    try:
        message, fds, flags, _ = socket.recv_fds(line, MAX_REQUEST, MAX_FDS)
    except OSError:
        return False
    if not message:
        return False
    try:
        request = json.loads(message)
        if flags & socket.MSG_CTRUNC or len(fds) != len(request["to"]) + 1:
            raise ValueError("descriptors lost on the way")
        _watch_ignores()  # read here, once: the child only looks it up
        reply = _birth(request, fds[:-1], fds[-1], cgroup)
    except Exception:  # noqa: BLE001 - a request it cannot read: the watch must live on
        reply = {"refused": errnos.EINVAL}
    finally:
        for fd in fds:  # the pipe's end above all: the worker reads it to EOF
            os.close(fd)
    try:
        line.send(json.dumps(reply).encode())
    except OSError:
        return False
    return True


def _answer(line: socket.socket) -> dict[str, int]:
    """The watch's answer; {} where it died first."""
    try:
        reply = line.recv(256)
    except ConnectionError:  # a reset: it died with our request unread
        return {}
    return json.loads(reply) if reply else {}


def _candidates(program: str, env: dict[str, str]) -> list[str]:
    """Where exec looks for `program`: itself when it names a path, else along PATH (the
    command's own, as subprocess searches it)."""
    if os.sep in program:
        return [program]
    return [os.path.join(d, program) for d in os.get_exec_path(env)]


def _birth(request: dict[str, object], fds: list[int], tell: int, cgroup: int
           ) -> dict[str, int]:
    try:
        pid = _clone3(cgroup)
    except OSError as refused:
        return {"refused": refused.errno or errnos.EINVAL}
    if pid == 0:
        _child(request, fds, tell)
    return {"pid": pid}


def _read_all(fd: int) -> bytes:
    read = b""
    while chunk := os.read(fd, 16):
        read += chunk
    return read


class _CloneArgs(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack", "stack_size",
        "tls", "set_tid", "set_tid_size", "cgroup")]


@functools.cache
def _syscall() -> "ctypes._NamedFuncPointer":
    libc = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the call keeps the GIL, in both
    libc.syscall.restype = ctypes.c_long
    return libc.syscall


def _clone3(cgroup: int) -> int:
    """fork(2) by hand, the child in `cgroup` and the worker's; 0 in the child. Only from a
    single-threaded process (the watch), so without the interpreter's fork hooks (they cost
    the birth most of a millisecond): no other thread can hold a lock the child needs, no
    import is under way, and the child runs only `_child`, which execs or exits."""
    # No exit_signal with CLONE_PARENT: the child's is the watch's own (SIGCHLD, to the worker).
    args = _CloneArgs(flags=CLONE_PARENT | CLONE_INTO_CGROUP, cgroup=cgroup)
    pid = _syscall()(ctypes.c_long(SYS_CLONE3), ctypes.byref(args),
                     ctypes.c_size_t(ctypes.sizeof(args)))
    if pid < 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    return int(pid)


def _child(request: dict[str, object], fds: list[int], tell: int) -> None:
    """What Popen's child does before it execs (start_new_session, close_fds, restored
    signals), then the exec; a failure's errno goes back on `tell`. Never returns."""
    code = errnos.ENOEXEC
    try:
        os.write(tell, b"%d " % os.getpid())  # first: whatever follows, the worker knows it
        targets = request["to"]
        assert isinstance(targets, list)
        # Above every target first, so that no dup2 lands on a descriptor still to be moved,
        # `tell` included (it must stay close-on-exec: its EOF says the exec happened).
        floor = max([*targets, *fds, tell]) + 1
        tell = fcntl.fcntl(tell, fcntl.F_DUPFD_CLOEXEC, floor)
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, floor) for fd in fds]
        for fd, target in zip(high, targets, strict=True):
            os.dup2(fd, target)  # inheritable
        keep = sorted({*targets, tell})
        low = 3
        for fd in keep:
            if fd >= low:
                os.closerange(low, fd)
                low = fd + 1
        os.closerange(low, os.sysconf("SC_OPEN_MAX"))
        os.setsid()
        os.chdir(str(request["cwd"]))
        code = -errnos.EPERM  # negative: what Popen's child would inherit could not be given
        _as_the_worker()
        code = errnos.ENOEXEC
        ignore = request["ignored"]
        assert isinstance(ignore, list)
        for sig in sorted(_watch_ignores() | set(ignore)):
            signal.signal(sig, signal.SIG_IGN if sig in ignore else signal.SIG_DFL)
        argv, env = request["argv"], request["env"]
        exes = request["exe"]
        assert isinstance(argv, list) and isinstance(env, dict) and isinstance(exes, list)
        first = 0  # as subprocess searches: the first error other than "not there" wins
        for exe in exes:
            try:
                os.execve(exe, argv, env)
            except OSError as error:
                code = error.errno or errnos.ENOEXEC
                if not first and code not in (errnos.ENOENT, errnos.ENOTDIR):
                    first = code
        code = first or code
    except OSError as error:
        failed = error.errno or errnos.ENOEXEC
        code = -failed if code < 0 else failed
    finally:
        try:
            os.write(tell, str(code).encode())
        finally:
            os._exit(127)


def ignored() -> set[int]:
    """The signals this process ignores (the kernel's SigIgn), less the two that Popen's child
    gets back at their default (restore_signals): what a command it starts inherits. As
    numbers: signal.valid_signals() makes each an enum member, 0.2 ms a command."""
    with open("/proc/self/status", "rb") as status:
        mask = next(int(line.split()[1], 16) for line in status if line.startswith(b"SigIgn:"))
    found = {n for n in range(1, mask.bit_length() + 1) if mask >> (n - 1) & 1}
    return (found & _SETTABLE) - _RESTORED


@functools.cache
def _watch_ignores() -> set[int]:
    """What the watch ignores (its stop signals, and what the worker ignored when it started
    it), which its children inherit and the command must not, unless the worker ignores it."""
    return ignored() | _RESTORED


def _as_the_worker() -> None:
    """The worker's CPUs, scheduling policy and nice value, as they are now (a Popen child
    inherits them from the worker's thread; the watch's are those of the worker's start). The
    worker is this child's parent (CLONE_PARENT)."""
    worker = os.getppid()
    os.sched_setaffinity(0, os.sched_getaffinity(worker))
    os.sched_setscheduler(0, os.sched_getscheduler(worker), os.sched_getparam(worker))
    os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, worker))


def _exits_within(pid: int, timeout: float) -> bool:
    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()  # not select(): a worker may hold more than 1024 descriptors
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    finally:
        os.close(fd)
