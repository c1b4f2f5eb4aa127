"""Three hosts, end to end: a coordinator namespace (Redis over TLS with a password, the SFTP
artifact store) and two worker namespaces of different backends, set up only by `benchfleet
deploy` over real SSH, run the demo sweep to a record that passes `benchfleet check`."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from runner.demo.target_repo import DEMO_MODELS, DEMO_SWEEP, make_models, make_target_repo
from tests.hosts.netns import Host, Lab
from tests.support.waits import eventually
from tests.trust.tls import make_certs, tls_args
from workers.shared.signing import generate

BENCHFLEET = str(Path(sys.executable).with_name("benchfleet"))
PASSWORD = "three-hosts-redis-pw-51e0"
REDIS_PORT = 6380
# The whole sweep (12 cells, two builds) on a busy 2-core machine; bounded.
SWEEP_TIMEOUT_S = 420
WORKERS = {"gb10": "cuda", "studio": "metal"}


@dataclass
class Three:
    lab: Lab
    coord: Host
    env: dict[str, str]  # the coordinator's settings
    sweep_id: str
    outputs: dict[str, subprocess.CompletedProcess[str]]

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return self.coord.run(BENCHFLEET, *args, env=self.env, timeout=timeout,
                              cwd=self.lab.root)


def _deploy(lab: Lab, coord: Host, host: Host, name: str, key: Path, ca: Path
            ) -> subprocess.CompletedProcess[str]:
    root = lab.root
    return coord.run(
        BENCHFLEET, "deploy", "install", f"root@{host.address}", "--key", str(key),
        "--known-hosts", str(root / "known_hosts"), "--dir", str(root / name / "benchfleet"),
        "--backend", WORKERS[name], "--name", name,
        "--redis-url", f"rediss://{coord.address}:{REDIS_PORT}/0", "--redis-ca", str(ca),
        "--artifacts", f"sftp://root@{coord.address}{root / 'store'}", "--artifacts-key",
        str(key), "--verify-key", str(root / "keys" / "coordinator.pub"), "--models-dir",
        str(root / "models"), "--allow-repo", str(root / "target"), "--tag",
        f"gpu=standin-{WORKERS[name]}", "--service", "supervisor",
        "--set", "idle_max_wait_s=2", "--set", "idle_interval_s=0.5",
        timeout=300, env={**os.environ, "BENCHFLEET_REDIS_PASSWORD": PASSWORD}, cwd=root)


@pytest.fixture(scope="module")
def three(lab: Lab, client_key: Path, wheel_cache: Path) -> Iterator[Three]:
    root = lab.root
    coord = lab.add("coord", client_key)
    hosts = {name: lab.add(name, client_key) for name in WORKERS}
    lab.known_hosts()
    generate(root / "keys" / "coordinator.pem", root / "keys" / "coordinator.pub")
    certs = make_certs(root / "tls", coord.address)
    (root / "redis").mkdir()
    (root / "store").mkdir()
    subprocess.Popen(coord.argv("redis-server", *tls_args(certs, REDIS_PORT), "--bind",
                                coord.address, "--requirepass", PASSWORD, "--save", "",
                                "--appendonly", "yes", "--dir", str(root / "redis")),
                     stdout=subprocess.DEVNULL, start_new_session=True)
    target = root / "target"
    make_target_repo(target)
    make_models(root / "models", DEMO_MODELS)
    outputs = {f"deploy {name}": _deploy(lab, coord, host, name, client_key, certs.ca)
               for name, host in hosts.items()}
    env = {**os.environ,
           "BENCHFLEET_REDIS_URL": f"rediss://:{PASSWORD}@{coord.address}:{REDIS_PORT}/0"
                                   f"?ssl_ca_certs={certs.ca}",
           "BENCHFLEET_SIGNING_KEY": str(root / "keys" / "coordinator.pem"),
           "BENCHFLEET_ARTIFACTS": f"sftp://root@{coord.address}{root / 'store'}",
           "BENCHFLEET_SSH_KEY": str(client_key),
           "BENCHFLEET_SSH_KNOWN_HOSTS": str(root / "known_hosts"),
           "BENCHFLEET_ARTIFACT_CACHE": str(root / "coordinator-cache"), "COLUMNS": "250"}
    spec = yaml.safe_load(DEMO_SWEEP.read_text())
    spec["target"]["repo"] = str(target)
    (root / "demo-sweep.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run = Three(lab, coord, env, "", outputs)
    # Deploy starts the workers and returns; submit refuses a sweep no live worker serves.
    eventually(lambda: set(WORKERS) <= {w["name"] for w in json.loads(
        run.cli("hosts", "--json").stdout or "[]")}, 120, "both deployed workers live", 0.5)
    submitted = run.cli("submit", str(root / "demo-sweep.yaml"))
    assert submitted.returncode == 0, (submitted.stderr, outputs)
    run.sweep_id = submitted.stdout.strip().splitlines()[-1]
    run.outputs["status"] = run.cli("status", run.sweep_id, "--watch", timeout=SWEEP_TIMEOUT_S)
    run.outputs["hosts"] = run.cli("hosts", "--json")
    run.outputs["record"] = run.cli("record", run.sweep_id, "-o", str(root / "record"))
    yield run


def test_deploy_alone_sets_up_both_workers(three: Three) -> None:
    for name in WORKERS:
        done = three.outputs[f"deploy {name}"]
        assert done.returncode == 0, done.stderr
        assert "started" in done.stdout
        env = (three.lab.root / name / "benchfleet" / "worker.env").read_text()
        assert f"rediss://:{PASSWORD}@{three.coord.address}:{REDIS_PORT}/0?ssl_ca_certs=" in env
        assert (three.lab.root / name / "benchfleet" / "keys" / "redis-ca.pem").is_file()
    workers = {w["name"]: w for w in json.loads(three.outputs["hosts"].stdout)}
    assert {n: w["backend"] for n, w in workers.items()} == WORKERS
    for name, backend in WORKERS.items():
        assert f"gpu=standin-{backend}" in workers[name]["tags"]
        assert "model:tinymoe-a3" in workers[name]["tags"]
        assert workers[name]["capabilities"]["checkpoints"] == ["tinymoe-a3"]


def test_the_demo_sweep_runs_on_both_hosts(three: Three) -> None:
    status = three.outputs["status"]
    assert status.returncode == 0, status.stdout + status.stderr
    assert "12 done" in status.stdout
    final = three.cli("status", three.sweep_id, "--watch")
    for name in WORKERS:
        assert f" {name} " in final.stdout, f"no cell ran on {name}"


def test_the_record_passes_check_against_the_store(three: Three) -> None:
    record = three.outputs["record"]
    assert record.returncode == 0, record.stdout + record.stderr
    assert "12 of 12 cells measured" in record.stdout
    (path,) = (three.lab.root / "record").glob("*.json")
    checked = three.cli("check", str(path), "--artifacts", str(three.lab.root / "store"))
    assert checked.returncode == 0, checked.stdout
    data = json.loads(path.read_text())
    assert PASSWORD not in path.read_text()
    assert data["sweep_id"] == three.sweep_id


def test_no_worker_log_holds_the_redis_password(three: Three) -> None:
    for name in WORKERS:
        log = (three.lab.root / name / "benchfleet" / "log" / "worker.log").read_text()
        assert f"{name}.{WORKERS[name]}@" in log, "the worker started"
        assert PASSWORD not in log
