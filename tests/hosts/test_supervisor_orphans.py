"""The pidfile supervisor ends what its worker left when the worker dies or is stopped: a
daemon in its own session, which neither the worker's process group nor its parent-death
signal reaches, and which a restarted worker without a writable cgroup v2 cannot find."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.harness import descendants_gone
from tests.support.waits import eventually

pytestmark = pytest.mark.integration


def test_a_killed_workers_daemon_is_ended_by_its_supervisor(tmp_path: Path) -> None:
    daemon_file, worker_file = tmp_path / "daemon.pid", tmp_path / "worker.pid"
    # A stand-in worker: it starts a daemon and waits, as a worker mid-command would.
    config = {"command": ["/bin/sh", "-c", f"setsid sleep 1000 & echo $! > {daemon_file}; "
                                           "exec sleep 1001"],
              "pidfile": str(tmp_path / "supervisor.pid"), "worker_pidfile": str(worker_file),
              "log": str(tmp_path / "supervisor.log"), "marker": "sleep 1001"}
    (tmp_path / "supervise.json").write_text(json.dumps(config))
    said = tmp_path / "supervisor.out"
    with said.open("wb") as out:
        supervisor = subprocess.Popen([sys.executable, "-m", "deploy.supervise", "run",
                                       str(tmp_path / "supervise.json")], stdout=out,
                                      start_new_session=True)
    try:
        worker, daemon = _started(worker_file, daemon_file)
        os.kill(worker, signal.SIGKILL)
        eventually(lambda: descendants_gone([daemon]), 10, "the daemon ended with its worker")
        _, second = _started(worker_file, daemon_file, before=(worker, daemon))  # restarted
    finally:
        supervisor.terminate()
        supervisor.wait(timeout=40)
    assert descendants_gone([second]), "a stop ends the daemon too"
    assert said.read_text().count("ended 1 processes the worker left") == 2


def _started(worker_file: Path, daemon_file: Path, before: tuple[int, int] = (0, 0)
             ) -> tuple[int, int]:
    """(worker, daemon) once both pid files name live processes other than `before`."""
    def both() -> tuple[int, int] | None:
        try:
            pids = int(worker_file.read_text()), int(daemon_file.read_text())
        except (OSError, ValueError):
            return None
        fresh = all(pid != old for pid, old in zip(pids, before, strict=True))
        return pids if fresh and not descendants_gone([pids[1]]) else None

    return eventually(both, 30, "the worker and its daemon running")
