"""When a worker's command really starts and ends: the kernel's process events.

Linux's process-event connector (netlink) reports every fork, exec and exit on the machine,
each stamped by the kernel with CLOCK_MONOTONIC in nanoseconds, the clock `time.monotonic_ns`
reads. The moment a command's process execs is taken from there, for benchfleet and bare
Celery alike, so neither side's own bookkeeping decides what is measured and the command
itself is left exactly as the recipe writes it. Needs root (CAP_NET_ADMIN).
"""

import contextlib
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

_NETLINK_CONNECTOR, _CN_IDX_PROC, _CN_VAL_PROC = 11, 1, 1
_LISTEN, _IGNORE = 1, 2
_NLMSG_DONE = 3
_FORK, _EXEC, _EXIT = 0x1, 0x2, 0x80000000
# nlmsghdr (16 bytes) and cn_msg (20) come before the proc_event.
_EVENT = 36
_RCVBUF = 32 << 20


class Unavailable(Exception):
    """The connector cannot be opened here (not root, or no such kernel support)."""


@dataclass(frozen=True)
class Exec:
    ns: int
    pid: int
    parent: int  # the followed process this one descends from
    direct: bool  # a child of it (a command it started), not a grandchild
    argv: tuple[str, ...] | None  # None when the process was gone before it could be read


class ProcWatch:
    """Records the execs of every descendant of the processes it is told to follow, and
    their exits. Runs one thread, in the benchmark's process, never in a worker's."""

    def __init__(self) -> None:
        try:
            self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_CONNECTOR)
            with contextlib.suppress(OSError):
                self.sock.setsockopt(socket.SOL_SOCKET, 33, _RCVBUF)  # SO_RCVBUFFORCE
            self.sock.bind((0, _CN_IDX_PROC))
            self._control(_LISTEN)
            self.sock.settimeout(0.5)  # so the thread sees `close` within half a second
        except (OSError, AttributeError) as error:
            raise Unavailable(f"cannot listen to the kernel's process events ({error}); the "
                              "benchmark needs Linux and root (CAP_NET_ADMIN)") from None
        self.parents: set[int] = set()
        self._root_of: dict[int, tuple[int, bool]] = {}
        self.execs: list[Exec] = []
        self.exits: dict[int, int] = {}
        self.lost = 0
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._listen, name="procwatch", daemon=True)
        self._thread.start()

    def _control(self, op: int) -> None:
        cn = struct.pack("=IIIIHH", _CN_IDX_PROC, _CN_VAL_PROC, 0, 0, 4, 0) + struct.pack("=I", op)
        self.sock.send(struct.pack("=IHHII", 16 + len(cn), _NLMSG_DONE, 0, 0, 0) + cn)

    def follow(self, pid: int) -> None:
        with self._cond:
            self.parents.add(pid)

    def _listen(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:  # ENOBUFS: the kernel dropped events while we were slow
                if self._stop:
                    return
                self.lost += 1
                continue
            if len(data) >= _EVENT + 16:
                self._event(data)

    def _event(self, data: bytes) -> None:
        what, _, ns = struct.unpack_from("=IIQ", data, _EVENT)
        body = _EVENT + 16
        if what == _FORK:
            _, parent_tgid, child, child_tgid = struct.unpack_from("=iiii", data, body)
            if child != child_tgid:
                return  # a thread
            if parent_tgid in self.parents:
                self._root_of[child] = (parent_tgid, True)
            elif parent_tgid in self._root_of:
                self._root_of[child] = (self._root_of[parent_tgid][0], False)
        elif what == _EXEC:
            pid, tgid = struct.unpack_from("=ii", data, body)
            root = self._root_of.get(tgid)
            if root is not None and pid == tgid:
                event = Exec(ns, pid, root[0], root[1], _argv(pid))
                with self._cond:
                    self.execs.append(event)
                    self._cond.notify_all()
        elif what == _EXIT:
            pid, tgid = struct.unpack_from("=ii", data, body)
            if pid == tgid and self._root_of.pop(pid, None) is not None:
                with self._cond:
                    self.exits[pid] = ns
                    self._cond.notify_all()

    def wait_exec(self, parent: int, since_ns: int, timeout_s: float,
                  match: Callable[[Exec], bool] | None = None) -> Exec:
        """The first exec by a child of `parent` at or after `since_ns` that `match` accepts."""
        def found() -> Exec | None:
            return next((e for e in self.execs if e.parent == parent and e.direct
                         and e.ns >= since_ns
                         and (match is None or match(e))), None)
        with self._cond:
            if not self._cond.wait_for(lambda: found() is not None, timeout_s):
                raise TimeoutError(f"no command started by process {parent} within "
                                   f"{timeout_s:g} s")
            event = found()
        assert event is not None
        return event

    def wait_exit(self, pid: int, timeout_s: float) -> int:
        with self._cond:
            if not self._cond.wait_for(lambda: pid in self.exits, timeout_s):
                raise TimeoutError(f"process {pid} did not exit within {timeout_s:g} s")
            return self.exits[pid]

    def since(self, parent: int, since_ns: int, until_ns: int | None = None) -> list[Exec]:
        with self._cond:
            return [e for e in self.execs if e.parent == parent and e.ns >= since_ns
                    and (until_ns is None or e.ns <= until_ns)]

    def commands(self, parent: int, since_ns: int, until_ns: int | None = None) -> list[Exec]:
        """The commands `parent` started, in order: for each child, its last exec. A child
        that first execs a wrapper (`setpriv ... -- COMMAND`) starts its command at the
        wrapper's exec of it, and the wrapper's time belongs to whoever started it."""
        last: dict[int, Exec] = {}
        for e in self.since(parent, since_ns, until_ns):
            if e.direct:
                last[e.pid] = e
        return list(last.values())

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self._control(_IGNORE)
        self._thread.join(timeout=2)
        self.sock.close()


def _argv(pid: int) -> tuple[str, ...] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a) or None


@contextlib.contextmanager
def watching() -> Iterator[ProcWatch]:
    watch = ProcWatch()
    try:
        yield watch
    finally:
        watch.close()


def pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")
