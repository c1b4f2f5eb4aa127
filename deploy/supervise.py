"""A supervisor for hosts with neither systemd nor launchd: keeps one worker running, restarts
it when it dies, and answers start, stop and status through a pidfile.

    python -m deploy.supervise start|stop|status|run|exec CONFIG.json

CONFIG (written by deploy, or by `benchfleet fleet up`) names the command, its env file (if
any), the pidfiles, the log, and optionally `marker`: what the child's /proc/PID/cmdline holds
(default "benchfleet"), so a pid left behind is ended only while it is still ours. The
supervisor holds an exclusive lock on its pidfile while it lives, so a stale pidfile is told
from a live one without trusting the pid in it. It waits on its child (no polling); between
restarts it backs off, and a worker that ran long enough starts the backoff anew. `exec` loads
the env file and becomes the worker: the launchd plist runs it, since launchd restarts itself.
"""

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from deploy.envfile import read_env
from workers.shared import processes

# First restart after 1 s, doubling to at most a minute; a worker that lived this long is
# healthy again and its next restart is quick.
BACKOFF_FIRST_S, BACKOFF_MAX_S, HEALTHY_AFTER_S = 1.0, 60.0, 60.0
# Celery's warm shutdown finishes the running command; past this the worker's group is killed
# and the cell's lease hands it to another worker.
STOP_GRACE_S = 30.0
START_DEADLINE_S = 10.0
# What the worker's environment keeps from the supervisor's; the rest comes from the env file.
KEEP_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR")


class Stop(Exception):
    """SIGTERM or SIGINT reached the supervisor."""


def load(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(path.read_text())
    return config


def worker_env(config: dict[str, Any]) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    return {**kept, **(read_env(Path(config["env_file"])) if config.get("env_file") else {})}


def run(config: dict[str, Any]) -> int:
    """Supervise in the foreground until told to stop."""
    pidfile = Path(config["pidfile"])
    lock = _lock(pidfile, retry_s=0.5)
    if lock is None:
        _say(f"already running (pid {pidfile.read_text().strip()})")
        return 0
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if processes.available():
        # What the worker leaves when it dies (a command's daemon in its own session, which
        # the worker's restart finds only in a cgroup) is re-parented here, and ended.
        processes.prctl(processes.CHILD_SUBREAPER, 1)
        # The env file (the Redis password) passes through this memory: closed to the
        # worker's commands, as the worker's own is (workers/service.py).
        processes.prctl(processes.DUMPABLE, 0)
    child: subprocess.Popen[bytes] | None = None
    backoff = BACKOFF_FIRST_S
    try:
        _end_leftover(Path(config["worker_pidfile"]), config.get("marker", "benchfleet"))
        while True:
            started = time.monotonic()
            child = _spawn(config)
            code = child.wait()
            _end_orphans()
            lived = time.monotonic() - started
            backoff = BACKOFF_FIRST_S if lived >= HEALTHY_AFTER_S else backoff
            _say(f"worker {child.pid} exited with {code} after {lived:.0f} s; restarting in "
                 f"{backoff:.0f} s")
            time.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
    except Stop:
        if child is not None:
            _end(child)
            _end_orphans()
        _say("stopped")
    finally:
        Path(config["worker_pidfile"]).unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)
        lock.close()
    return 0


def start(config_path: Path, quiet: bool = False) -> int:
    """Start the supervisor detached from this session (an SSH command returns at once);
    print its status as JSON unless `quiet`."""
    config = load(config_path)
    if status(config)["running"]:
        if not quiet:
            _say("already running")
        return 0
    log = Path(config["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    # The supervisor keeps no more of this shell's environment than its worker does: a
    # command the worker runs can read /proc/<supervisor>/environ as well.
    kept = {k: v for k, v in os.environ.items() if k in KEEP_ENV}
    with log.open("ab") as out:
        subprocess.Popen([sys.executable, "-m", "deploy.supervise", "run", str(config_path)],
                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, cwd=config.get("workdir"), env=kept)
    deadline = time.monotonic() + START_DEADLINE_S
    while not (now := status(config))["worker_pid"]:
        if time.monotonic() > deadline:
            _say(f"the supervisor did not start its worker within {START_DEADLINE_S:.0f} s; "
                 f"see {log}")
            return 1
        time.sleep(0.05)
    if not quiet:
        print(json.dumps(now))
    return 0


def stop(config: dict[str, Any]) -> int:
    if status(config)["supervisor_pid"] is None:
        _say("not running")
        return 0
    return stop_all([config])


def stop_all(configs: list[dict[str, Any]]) -> int:
    """Tell every running supervisor to stop, then wait for all: their workers finish their
    cells side by side, not one after another."""
    pids = [pid for config in configs if (pid := status(config)["supervisor_pid"])]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S + 10
    while running := [c for c in configs if status(c)["running"]]:
        if time.monotonic() > deadline:
            _say(f"{len(running)} supervisor(s) did not stop")
            return 1
        time.sleep(0.05)
    return 0


def status(config: dict[str, Any]) -> dict[str, Any]:
    """Whether the supervisor lives (it holds its pidfile's lock) and its worker's pid."""
    pidfile, worker = Path(config["pidfile"]), Path(config["worker_pidfile"])
    lock = _lock(pidfile, create=False)
    if lock is not None or not pidfile.exists():
        if lock is not None:
            lock.close()
        return {"running": False, "supervisor_pid": None, "worker_pid": None}
    return {"running": True, "supervisor_pid": _read_pid(pidfile),
            "worker_pid": _read_pid(worker) if worker.exists() else None}


def exec_worker(config: dict[str, Any]) -> None:
    os.chdir(config.get("workdir") or ".")
    command = config["command"]
    os.execve(command[0], command, worker_env(config))


def _spawn(config: dict[str, Any]) -> "subprocess.Popen[bytes]":
    with Path(config["log"]).open("ab") as out:
        # Its own group, so a stop reaches the worker's children too.
        child = subprocess.Popen(config["command"], env=worker_env(config),
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True, cwd=config.get("workdir"))
    Path(config["worker_pidfile"]).write_text(f"{child.pid}\n")
    _say(f"worker {child.pid} started")
    return child


def _end(child: "subprocess.Popen[bytes]") -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    try:
        child.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def _end_orphans() -> None:
    """Every process the worker left, once it has exited: the supervisor runs nothing else."""
    if not processes.available():
        return
    try:
        ended = processes.end_descendants(STOP_GRACE_S)
    except RuntimeError as error:  # a process stuck in the kernel: say so, supervise on
        _say(str(error))
        return
    if ended:
        _say(f"ended {ended} processes the worker left")


def _end_leftover(worker_pidfile: Path, marker: str) -> None:
    """A worker whose supervisor was killed outright still runs; end it before starting
    another, or the host would serve two."""
    pid = _read_pid(worker_pidfile) if worker_pidfile.exists() else None
    cmdline = Path(f"/proc/{pid}/cmdline")
    if pid and cmdline.exists() and marker.encode() in cmdline.read_bytes():
        _say(f"ending worker {pid}, left by a supervisor that died")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while cmdline.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def _lock(pidfile: Path, create: bool = True, retry_s: float = 0.0) -> Any:
    """The pidfile opened and exclusively locked, or None when another process holds it.
    `status` takes the lock for an instant to test it; `retry_s` outlasts such a test."""
    if not create and not pidfile.exists():
        return None
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    handle = pidfile.open("a+" if create else "r")
    deadline = time.monotonic() + retry_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() >= deadline:
                handle.close()
                return None
            time.sleep(0.02)


def _read_pid(path: Path) -> int | None:
    text = path.read_text().strip()
    return int(text) if text.isdigit() else None


def _stop(signum: int, frame: object) -> None:
    raise Stop


def _say(sentence: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    print(f"{stamp} benchfleet supervisor: {sentence}", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop", "status", "run", "exec"):
        print("usage: python -m deploy.supervise start|stop|status|run|exec CONFIG.json",
              file=sys.stderr)
        return 2
    verb, path = argv[0], Path(argv[1])
    if verb == "start":
        return start(path)
    config = load(path)
    if verb == "status":
        print(json.dumps(status(config)))
        return 0
    if verb == "exec":
        exec_worker(config)
    return stop(config) if verb == "stop" else run(config)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
