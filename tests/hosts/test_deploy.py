"""`benchfleet deploy` over real SSH to two namespace hosts, run from a coordinator namespace
that also holds Redis (password required) and the SFTP store. The hosts have no systemd, so
the pidfile supervisor runs the workers; the unit and the plist are checked on their own."""

import hashlib
import os
import plistlib
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deploy.layout import Layout
from deploy.services import Launchd, Systemd
from tests.hosts.netns import Host, Lab
from workers.shared.signing import generate

ROOT = Path(__file__).parents[2]
BENCHFLEET = str(Path(sys.executable).with_name("benchfleet"))
PASSWORD = "s3cret-redis-pw"
DEADLINE_S = 30.0


@dataclass
class Fleet:
    lab: Lab
    coord: Host
    workers: dict[str, Host]
    key: Path
    first: dict[str, subprocess.CompletedProcess[str]]

    def directory(self, name: str) -> Path:
        # Namespace hosts share one filesystem, so each gets its own directory.
        return self.lab.root / name / "benchfleet"

    def deploy(self, verb: str, name: str, *extra: str,
               timeout: float = 300) -> subprocess.CompletedProcess[str]:
        host = self.workers[name]
        return self.coord.run(
            BENCHFLEET, "deploy", verb, f"root@{host.address}", "--key", str(self.key),
            "--known-hosts", str(self.lab.root / "known_hosts"), "--dir",
            str(self.directory(name)), *extra, timeout=timeout,
            env={**os.environ, "BENCHFLEET_REDIS_PASSWORD": PASSWORD}, cwd=self.lab.root)

    def install(self, name: str) -> subprocess.CompletedProcess[str]:
        backend = {"w1": "cpu", "w2": "cuda"}[name]
        public = self.lab.root / "keys" / "coordinator.pub"
        if not public.exists():  # workers run only what this key's private half signed
            generate(public.with_suffix(".pem"), public)
        return self.deploy("install", name, "--backend", backend, "--name", name,
                           "--verify-key", str(public),
                           "--redis-url", f"redis://{self.coord.address}:6379/0",
                           "--artifacts", f"sftp://root@{self.coord.address}"
                                          f"{self.lab.root / 'store'}",
                           "--artifacts-key", str(self.key), "--tag", "gpu=none",
                           "--allow-repo", str(self.lab.root / "target"),
                           "--service", "supervisor")

    def clients(self) -> str:
        done = self.coord.run("redis-cli", "-h", self.coord.address, "-a", PASSWORD,
                              "--no-auth-warning", "client", "list")
        return done.stdout


@pytest.fixture(scope="module")
def fleet(lab: Lab, client_key: Path, wheel_cache: Path) -> Iterator[Fleet]:
    coord = lab.add("coord", client_key)
    workers = {name: lab.add(name, client_key) for name in ("w1", "w2")}
    lab.known_hosts()
    (lab.root / "redis").mkdir()
    subprocess.Popen(coord.argv("redis-server", "--bind", coord.address, "--port", "6379",
                                "--requirepass", PASSWORD, "--save", "", "--appendonly", "no",
                                "--dir", str(lab.root / "redis")),
                     stdout=subprocess.DEVNULL, start_new_session=True)
    fleet = Fleet(lab, coord, workers, client_key, {})
    fleet.first = {name: fleet.install(name) for name in workers}
    yield fleet


def test_install_starts_supervised_workers_that_reach_redis(fleet: Fleet) -> None:
    for name, done in fleet.first.items():
        assert done.returncode == 0, done.stderr
        assert "created the venv" in done.stdout and "started" in done.stdout
        env = (fleet.directory(name) / "worker.env").read_text()
        assert f"redis://:{PASSWORD}@{fleet.coord.address}:6379/0" in env
        assert 'BENCHFLEET_ARTIFACTS="sftp://root@' in env
        assert (fleet.directory(name) / "worker.env").stat().st_mode & 0o777 == 0o600
        assert (fleet.directory(name) / "keys" / "store_key").stat().st_mode & 0o777 == 0o600
        status = fleet.deploy("status", name)
        assert status.returncode == 0 and "running (worker pid" in status.stdout, status
    _until(lambda: all(f"addr={h.address}:" in fleet.clients()
                       for h in fleet.workers.values()), "both workers connect to Redis")


def test_second_install_changes_nothing(fleet: Fleet) -> None:
    before = {name: _snapshot(fleet.directory(name)) for name in fleet.workers}
    pids = {name: fleet.deploy("status", name).stdout for name in fleet.workers}
    for name in fleet.workers:
        again = fleet.install(name)
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip().endswith(f"unchanged (supervisor "
                                             f"{fleet.directory(name)}/supervise.json)")
        assert _snapshot(fleet.directory(name)) == before[name], "same files, same hashes"
        assert fleet.deploy("status", name).stdout == pids[name], "not restarted"


def test_supervisor_restarts_a_killed_worker(fleet: Fleet) -> None:
    pid = _worker_pid(fleet, "w1")
    os.kill(pid, signal.SIGKILL)
    _until(lambda: _worker_pid(fleet, "w1") not in (None, pid), "a new worker")
    log = (fleet.directory("w1") / "log" / "worker.log").read_text()
    assert f"worker {pid} exited with -9" in log


def test_stop_restart_logs(fleet: Fleet) -> None:
    stopped = fleet.deploy("stop", "w2")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped
    assert fleet.workers["w2"].pids() == [fleet.workers["w2"].sshd.proc.pid]  # type: ignore[union-attr]
    restarted = fleet.deploy("restart", "w2")
    assert restarted.returncode == 0 and "running" in restarted.stdout, restarted
    logs = fleet.deploy("logs", "w2", "-n", "400")
    assert logs.returncode == 0 and "supervisor: stopped" in logs.stdout
    assert PASSWORD not in logs.stdout, "the log never shows the Redis password"


def test_uninstall_removes_everything(fleet: Fleet) -> None:
    done = fleet.deploy("uninstall", "w2")
    assert done.returncode == 0 and "uninstalled" in done.stdout, done
    assert not fleet.directory("w2").exists()
    assert fleet.workers["w2"].pids() == [fleet.workers["w2"].sshd.proc.pid]  # type: ignore[union-attr]
    again = fleet.deploy("status", "w2")
    assert again.returncode == 2 and "no benchfleet worker is deployed" in again.stderr


def test_missing_python_is_one_sentence(fleet: Fleet) -> None:
    done = fleet.deploy("install", "w1", "--backend", "cpu", "--redis-url",
                        "redis://10.77.0.1:6379/0", "--python", "/opt/none/python3")
    assert done.returncode == 2
    assert "has no /opt/none/python3; install Python 3.11" in done.stderr
    assert "Traceback" not in done.stderr


def test_systemd_unit_passes_systemd_analyze(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    layout = Layout(str(tmp_path), "gb10-a", "cuda")
    Path(layout.benchfleet).parent.mkdir(parents=True)
    Path(layout.benchfleet).write_text("#!/bin/sh\n")
    Path(layout.benchfleet).chmod(0o755)
    Path(layout.env_file).write_text("")
    unit = Systemd(layout, "/root", root=True)
    path = tmp_path / unit.unit
    path.write_text(unit.render())
    done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True,
                          timeout=60)
    problems = [line for line in done.stderr.splitlines() if unit.unit in line]
    assert done.returncode == 0 and not problems, done.stderr
    assert f"ExecStart={layout.benchfleet} worker --backend cuda --name gb10-a" in path.read_text()


def test_launchd_plist_is_valid(tmp_path: Path) -> None:
    layout = Layout("/Users/lab/benchfleet", "studio", "metal")
    agent = Launchd(layout, "/Users/lab", uid=501)
    plist = plistlib.loads(agent.render().encode())
    assert plist["Label"] == "org.benchfleet.worker.studio"
    assert plist["ProgramArguments"] == [layout.python, "-m", "deploy.supervise", "exec",
                                         layout.supervise_config]
    assert plist["KeepAlive"] is True and plist["StandardOutPath"] == layout.log
    assert agent.file == "/Users/lab/Library/LaunchAgents/org.benchfleet.worker.studio.plist"


def _worker_pid(fleet: Fleet, name: str) -> int | None:
    out = fleet.deploy("status", name).stdout
    return int(out.split("worker pid ")[1].split(")")[0]) if "worker pid" in out else None


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file but the log: its sha256 and mtime."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                         p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and "log" not in p.parts
            and "__pycache__" not in p.parts}


def _until(ready: "object", what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not ready():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
