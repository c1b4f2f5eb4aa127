"""The host lease: one measured command or build per host at a time, across all its workers.

A lock on one file per host (BENCHFLEET_HOST_LOCK), whose descriptor the command inherits:
if the worker dies and its command lives on as an orphan, the orphan still holds the lease,
and nothing measures beside it, until the worker's restart ends it. On a live worker nothing
holds it past the command: every descendant ends with it (workers/descendants.py).
The holder writes who it is, its sweep and until when into the file, so a worker that waits
for it keeps its own lease alive for that long, not forever: the lease hook does the keeping
(`keep_alive`, workers/hooks/lease.py). The next taker reads whose sweep held it last: another
sweep between two commands of one group is noted on the run (`other_sweep`), and the record
flags it.
"""

import fcntl
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from workers import descendants
from workers.execute import Command
from workers.hooks import Hook, Proceed, Runs
from workers.in_flight import Attempt, Group

# Roles that load the host and so take the lease (a probe's `--help` is too short to matter).
HEAVY = ("build", "warmup", "measure", "profile")
# While waiting for a holder that says nothing about itself, assume this long.
UNKNOWN_HOLD_S = 4 * 3600.0
# The most of the file a holder's record is read from (one record is about 200 bytes).
_MOST = 4096


class HostLease(Hook):
    def __init__(self, path: Path, worker: str, slack_s: float,
                 keep_alive: Callable[[float], None]) -> None:
        # keep_alive(seconds): this worker stays live that long (its lease, plus its slack)
        self.path, self.worker, self.slack_s, self.keep_alive = path, worker, slack_s, keep_alive
        path.parent.mkdir(parents=True, exist_ok=True)
        self._held_in_group = False
        self._other_sweep: str | None = None  # seen during this group, kept to its end

    def before_group(self, group: Group) -> Group:
        self._held_in_group, self._other_sweep = False, None
        return group

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        if command.role not in HEAVY:
            return proceed()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._acquire(fd, command, attempt.sweep_id)
            command.pass_fds.append(fd)
            command.host_lease = True
            return proceed()
        finally:
            # Closing (not unlocking) releases the lock only once an orphaned child that
            # inherited the descriptor has gone too. The command may come through again (a
            # retry, the idle gate finding the host busy under the lease): it passes on only
            # the descriptor of the lease it holds then.
            if fd in command.pass_fds:
                command.pass_fds.remove(fd)
            os.close(fd)

    def _acquire(self, fd: int, command: Command, sweep_id: str) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            wait = _holder_until(fd) - time.time()
            self.keep_alive(max(wait, 0) + command.call.timeout_s)
            with descendants.resting():  # the holder's command is measured meanwhile
                fcntl.flock(fd, fcntl.LOCK_EX)
        said = _said(fd)
        last = _parsed(said).get("sweep")
        if self._held_in_group and isinstance(last, str) and last != sweep_id:
            self._other_sweep = last
        self._held_in_group = True
        command.other_sweep = self._other_sweep
        until = time.time() + command.call.timeout_s + self.slack_s
        record = json.dumps({"worker": self.worker, "pid": os.getpid(), "sweep": sweep_id,
                             "command": command.label, "until": until}).encode()
        # Written over the last holder's words, padded with spaces to their length (JSON
        # reads past them), never truncated: on ext4 a truncate to 0 waits for the page's
        # writeback that the previous close started, most of a millisecond a command.
        os.pwrite(fd, record.ljust(len(said)), 0)


def _said(fd: int) -> bytes:
    try:
        return os.pread(fd, _MOST, 0)
    except OSError:
        return b""


def _parsed(said: bytes) -> dict[str, object]:
    """What the lease's last holder wrote about itself ({} when nothing readable)."""
    try:
        data = json.loads(said)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _holder_until(fd: int) -> float:
    try:
        return float(_parsed(_said(fd))["until"])  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError):
        return time.time() + UNKNOWN_HOLD_S
