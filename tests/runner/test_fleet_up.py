"""`benchfleet fleet up|status|down` on real processes: a redis-server and two workers under
the pidfile supervisor, in a fleet directory of the test's own (BENCHFLEET_FLEET_DIR)."""

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

# What the user's shell may hold after sourcing an env file: no fleet process may inherit it.
LEAKED = "/somewhere/the-coordinators.pem"


def fleet(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.cli", "fleet", *args],
                          capture_output=True, text=True, env=env, timeout=180)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("BENCHFLEET_")},
           "BENCHFLEET_FLEET_DIR": str(tmp_path / "fleet"), "BENCHFLEET_SIGNING_KEY": LEAKED,
           "COLUMNS": "200"}
    yield env
    fleet(env, "down")  # whatever the test did, nothing it started outlives it


def processes(env: dict[str, str]) -> dict[str, dict[str, object]]:
    done = fleet(env, "status", "--json")
    return {p["name"]: p for p in json.loads(done.stdout)["processes"]}


def redis_cli(port: int, *args: str, password: str | None = None) -> str:
    auth = ["-a", password, "--no-auth-warning"] if password else []
    return subprocess.run(["redis-cli", "-p", str(port), *auth, *args], capture_output=True,
                          text=True, timeout=30).stdout


def environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().partition("=")[::2] for p in pairs if p)


def alive(pid: int) -> bool:
    stat_line = Path(f"/proc/{pid}/stat")
    return stat_line.exists() and stat_line.read_text().split(") ")[1][0] != "Z"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_up_status_down(env: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "fleet"
    done = fleet(env, "up", "--worker", "cpu-1:cpu", "--worker", "cuda-1:cuda",
                 "--allow-repo", str(tmp_path / "target"))
    assert done.returncode == 0, done.stderr
    assert f"to submit from a shell: . {home / 'env'}" in done.stdout
    assert "warning: worker" not in done.stdout  # backends the probe knows, each built

    # Redis: persistent, never evicting, and only with the password from its mode-600 conf.
    conf = home / "redis" / "redis.conf"
    assert mode(conf) == 0o600
    password = re.search(r"^requirepass (\S+)$", conf.read_text(), re.M)[1]  # type: ignore[index]
    port = int(re.search(r"^port (\d+)$", conf.read_text(), re.M)[1])  # type: ignore[index]
    assert "NOAUTH" in redis_cli(port, "CONFIG", "GET", "appendonly")
    assert redis_cli(port, "CONFIG", "GET", "appendonly", password=password).split() == [
        "appendonly", "yes"]
    assert redis_cli(port, "CONFIG", "GET", "maxmemory-policy", password=password).split() == [
        "maxmemory-policy", "noeviction"]

    # The user's env file holds the coordinator's settings; every secret file is the owner's.
    exported = dict(re.findall(r"^export (BENCHFLEET_\w+)=(.*)$", (home / "env").read_text(),
                               re.M))
    assert exported["BENCHFLEET_SIGNING_KEY"] == str(home / "keys" / "coordinator.pem")
    assert password in exported["BENCHFLEET_REDIS_URL"]
    for secret in (home / "env", home / "keys" / "coordinator.pem", home / "fleet.json",
                   *(home / "run").glob("*.env")):
        assert mode(secret) == 0o600, secret

    # Workers and their supervisors hold the verify key, never the signing key.
    running = processes(env)
    assert {n: (p["backend"], p["live"]) for n, p in running.items()} == {
        "redis": (None, True), "cpu-1": ("cpu", True), "cuda-1": ("cuda", True)}
    assert fleet(env, "status").returncode == 0
    for name in ("cpu-1", "cuda-1"):
        pid = int(running[name]["pid"])  # type: ignore[call-overload]
        supervisor = int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])
        for held in (environ(pid), environ(supervisor)):
            assert "BENCHFLEET_SIGNING_KEY" not in held and LEAKED not in held.values()
        assert environ(pid)["BENCHFLEET_VERIFY_KEY"] == str(home / "keys" / "coordinator.pub")

    # A second `up` alone changes nothing; down stops all; Redis keeps its data across both.
    redis_cli(port, "SET", "kept", "across-restarts", password=password)
    assert fleet(env, "up").returncode == 0
    assert {n: p["pid"] for n, p in processes(env).items()} == {
        n: p["pid"] for n, p in running.items()}
    down = fleet(env, "down")
    assert down.returncode == 0 and "3 processes stopped" in down.stdout, down.stderr
    assert not [n for n, p in running.items() if alive(int(p["pid"]))]  # type: ignore[call-overload]
    assert fleet(env, "status").returncode == 1
    assert all(p["pid"] is None for p in processes(env).values())
    assert fleet(env, "up").returncode == 0
    assert redis_cli(port, "GET", "kept", password=password).strip() == "across-restarts"


def test_mistakes_are_sentences(env: dict[str, str]) -> None:
    for args, said in ((["up"], "no fleet in"), (["up", "--worker", "gpu"], "NAME:BACKEND"),
                       (["up", "--allow-repo", "x"], "name the fleet's workers"),
                       (["status"], "no fleet in")):
        done = fleet(env, *args)
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_up_warns_of_a_backend_the_probe_does_not_know(env: dict[str, str]) -> None:
    done = fleet(env, "up", "--worker", "tpu-1:tpu")
    assert done.returncode == 0, done.stderr
    assert ("warning: worker tpu-1: backend tpu is none the host probe knows (cpu, cuda, "
            "metal); only recipes that build for any backend (tinymoe-build) serve it; check "
            "--backend for a typo") in done.stdout
