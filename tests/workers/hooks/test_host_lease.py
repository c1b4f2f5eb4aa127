"""The host lease: a heavy command holds the host's lock, inherited by the child; a worker that
finds it held keeps its own lease alive for the holder's stated time, then waits its turn."""

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.support.cells import Submitted, python_command, submit
from workers.execute import Command
from workers.hooks.host_lease import HostLease
from workers.in_flight import Attempt

# Takes the lock, says until when it holds it, and holds it until its stdin closes.
HOLDER = ("import fcntl, json, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
          "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); "
          "os.pwrite(fd, json.dumps({'until': time.time() + 500}).encode(), 0); "
          "print('held', flush=True); sys.stdin.read()")


def _free(path: Path) -> bool:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_a_heavy_command_holds_the_lock_its_child_inherits(submitted: Submitted,
                                                           tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    hook = HostLease(path, "w1", 5.0, lambda s: None)
    command = python_command(tmp_path / "runs", "pass", timeout_s=60.0)
    seen: list[tuple[bool, list[int], bool, dict[str, object]]] = []

    def proceed() -> tuple:
        seen.append((command.host_lease, list(command.pass_fds), _free(path),
                     json.loads(path.read_text())))
        return ()

    hook.around_command(submitted.attempt(), command, proceed)
    ((leased, fds, free, holder),) = seen
    assert leased and len(fds) == 1 and not free
    assert holder["worker"] == "w1" and holder["command"] == "measure"
    assert holder["until"] > time.time() + 60  # its timeout and the slack  # type: ignore[operator]
    assert _free(path)  # closed after the command: released


def test_a_probe_takes_no_lock(submitted: Submitted, tmp_path: Path) -> None:
    hook = HostLease(tmp_path / "host.lock", "w1", 5.0, lambda s: None)
    command: Command = python_command(tmp_path, "pass", role="probe", label="probe-help")
    hook.around_command(submitted.attempt(), command, lambda: ())
    assert not command.host_lease and command.pass_fds == []


def test_a_held_host_keeps_the_waiting_worker_alive_for_the_holders_time(
        submitted: Submitted, tmp_path: Path) -> None:
    path = tmp_path / "host.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    kept: list[float] = []

    def keep_alive(seconds: float) -> None:
        kept.append(seconds)
        assert holder.stdin is not None
        holder.stdin.close()  # the holder's command ends: the waiter gets its turn

    hook = HostLease(path, "w1", 5.0, keep_alive)
    command = python_command(tmp_path / "runs", "pass", timeout_s=60.0)
    hook.around_command(submitted.attempt(), command, lambda: ())
    holder.wait(timeout=30)
    assert len(kept) == 1 and 540 < kept[0] <= 560  # the holder's 500 s and its own 60 s


def test_another_sweep_between_two_commands_of_a_group_is_noted_to_the_groups_end(
        submitted: Submitted, unit_redis: tuple[redis.Redis, str], tmp_path: Path) -> None:
    other = submit(*unit_redis, tmp_path / "keys", sweep_id="hooks-other")
    path = tmp_path / "host.lock"
    mine = HostLease(path, "w1", 5.0, lambda s: None)
    neighbour = HostLease(path, "w2", 5.0, lambda s: None)  # the same host, another worker

    def run(hook: HostLease, attempt: Attempt, label: str) -> str | None:
        command = python_command(tmp_path / "runs", "pass", label=label)
        hook.around_command(attempt, command, lambda: ())
        return command.other_sweep

    neighbour.before_group(other.group())
    run(neighbour, other.attempt(), "theirs-before")
    mine.before_group(submitted.group())
    # The other sweep held the host before this group began: the group is still back to back.
    assert run(mine, submitted.attempt(0), "first") is None
    neighbour.before_group(submitted.group("task-n"))  # another group of this sweep
    assert run(neighbour, submitted.attempt(1), "same-sweep") is None
    assert run(mine, submitted.attempt(1), "second") is None
    neighbour.before_group(other.group())
    run(neighbour, other.attempt(), "theirs-between")
    assert run(mine, submitted.attempt(2), "third") == "hooks-other"
    assert run(mine, submitted.attempt(3), "fourth") == "hooks-other"  # to the group's end
    assert json.loads(path.read_text())["sweep"] == submitted.sweep_id
    mine.before_group(submitted.group("task-2"))
    assert run(mine, submitted.attempt(0), "next-group") is None
