"""A command cannot read its worker's environment or memory (the Redis password is there),
nor its supervisor's: neither is dumpable, so their /proc/PID/environ and mem are closed to
processes of their own user. Root reads them all the same (CAP_SYS_PTRACE), so here the
worker (or supervisor) and its commands run as root without any capability: the same user, as
/proc sees it, and nothing more."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fleet import wait
from tests.support.waits import eventually
from tests.trust.conftest import PASSWORD, PEEK, trust_fleet

pytestmark = pytest.mark.integration

SAME_USER_ONLY = ("setpriv", "--inh-caps=-all", "--bounding-set=-all", "--")


def test_a_command_cannot_read_its_workers_environ_or_memory(tmp_path: Path) -> None:
    with trust_fleet(tmp_path, [("cpu", "sealed")], wrap=SAME_USER_ONLY) as fleet:
        sweep_id = fleet.submit(fleet.sweep_file(
            "peek", backends={"cpu": {"build": "peek-build"}}))
        wait(fleet.store, sweep_id)
        assert {s.status for s in fleet.store.states(sweep_id).values()} == {"done"}
        (peek,) = (Path(fleet.settings.artifacts) / sweep_id).glob(
            "*/attempt-*/build/peek.stdout.txt")
        seen = peek.read_text()
        worker = fleet.workers.procs["sealed/cpu"]
        assert f"parent {worker.pid}\n" in seen, seen  # it peeked at the worker itself
        assert "environ refused" in seen and "mem refused" in seen, seen
        assert PASSWORD not in seen and "BENCHFLEET_REDIS_URL" not in seen


def test_a_command_cannot_read_its_supervisors_memory(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    # A stand-in worker that peeks at its parent, the supervisor, which read the env file.
    config = {"command": ["/bin/sh", "-c", f"{{ {PEEK}; }} > {seen} 2>&1; exec sleep 1000"],
              "env_file": str(tmp_path / "worker.env"), "pidfile": str(tmp_path / "sup.pid"),
              "worker_pidfile": str(tmp_path / "worker.pid"), "log": str(tmp_path / "log")}
    (tmp_path / "worker.env").write_text(f'BENCHFLEET_REDIS_URL="redis://:{PASSWORD}@h:6379/0"\n')
    (tmp_path / "supervise.json").write_text(json.dumps(config))
    supervisor = subprocess.Popen([*SAME_USER_ONLY, sys.executable, "-m", "deploy.supervise",
                                   "run", str(tmp_path / "supervise.json")],
                                  stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        said = eventually(lambda: "mem " in _text(seen) and _text(seen), 30, "the peek")
    finally:
        supervisor.terminate()
        supervisor.wait(timeout=40)
    assert f"parent {supervisor.pid}\n" in said and "mem refused" in said, said


def _text(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
