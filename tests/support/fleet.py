"""Real parts: a private redis-server, a git target with good and bad commits, worker processes."""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from jobs.record.attempts import FINAL
from runner.demo.local_fleet import LocalFleet, settings_env
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, commit_all, git, make_models, make_target_repo
from tests.support.waits import eventually
from workers.shared.leases import live_workers
from workers.shared.settings import Settings
from workers.shared.signing import generate
from workers.shared.state import Store

SECOND_MODEL = {"family": "deepseek_v4", "layers": 2, "hidden": 64, "experts": 8, "top_k": 2,
                "expert_width": 128, "vocab": 256, "seed": 2}
# Longest a test sweep may take before the test gives up (bounded, never a fixed sleep).
SWEEP_DEADLINE_S = 240.0
# How long a worker may take to start on a loaded 2-core machine (Celery, the host probe).
WORKER_START_S = 120.0
# The idle gate's longest wait in tests (its own test uncaps it).
GATE_CAP_S = 1.0


@dataclass(frozen=True)
class Target:
    repo: Path
    first: str
    main: str
    broken: str
    reformatted: str


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="session")
def target(tmp_path_factory: pytest.TempPathFactory) -> Target:
    repo = tmp_path_factory.mktemp("target") / "tinymoe"
    first, main = make_target_repo(repo)
    git(repo, "checkout", "--quiet", "-b", "broken")
    with (repo / "src" / "tinymoe.py").open("a") as f:
        f.write("\ndef broken(:\n")
    broken = commit_all(repo, "a syntax error: the build must fail")
    git(repo, "checkout", "--quiet", "-b", "reformat", main)
    bench = repo / "src" / "bench_decode.py"
    bench.write_text(bench.read_text().replace('"  Decode:           ', '"  Decode time:      '))
    reformatted = commit_all(repo, "print decode under another label")
    git(repo, "checkout", "--quiet", "main")
    return Target(repo, first, main, broken, reformatted)


def fleet_settings(root: Path, redis_url: str, **overrides: object) -> Settings:
    """Settings for a test fleet on this machine: its own keys, host lock and artifact store,
    an idle gate capped short (the record marks a capped gate that found the host busy), and
    an allow-list of the target repositories tests make beside `root`."""
    keys = root / "keys"
    if not (keys / "coordinator.pub").exists():
        generate(keys / "coordinator.pem", keys / "coordinator.pub")
    values: dict[str, object] = dict(
        redis_url=redis_url, artifacts=root / "artifacts", workspace=root / "workspace",
        models_dir=root / "models", signing_key=keys / "coordinator.pem",
        verify_key=keys / "coordinator.pub", host_lock=root / "host.lock",
        idle_max_wait_s=GATE_CAP_S, idle_interval_s=0.2, lease_margin_s=3.0, setup_timeout_s=20.0,
        allowed_repos=[f"{root.parent}/*"])
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Settings:
    root = tmp_path_factory.mktemp("fleet")
    make_models(root / "models", {**DEMO_MODELS, "tinymoe-b2": SECOND_MODEL})
    return fleet_settings(root, redis_server.url)


@pytest.fixture(scope="session")
def fleet(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalFleet]:
    """cuda and metal with one worker each; cpu with two, to exercise the host pin."""
    local = LocalFleet(settings, tmp_path_factory.mktemp("worker-logs"))
    for backend, name in (("cuda", "w-cuda"), ("metal", "w-metal"), ("cpu", "cpu-1"),
                          ("cpu", "cpu-2")):
        local.start(backend, name)
    until_live(settings, "w-cuda", "w-metal", "cpu-1", "cpu-2")
    yield local
    local.stop()


@pytest.fixture
def store(settings: Settings) -> Store:
    return Store.connect(settings.redis_url)


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **settings_env(settings),
                                          "COLUMNS": "200"}, timeout=120)


def sweep_file(tmp: Path, spec: dict[str, object]) -> Path:
    path = tmp / f"{spec['name']}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def until_live(settings: Settings, *names: str) -> None:
    """Until these workers hold their leases: `submit` refuses a sweep no live worker serves."""
    client = Store.connect(settings.redis_url).r
    eventually(lambda: set(names) <= set(live_workers(client)), WORKER_START_S,
               f"workers {', '.join(names)} live", every_s=0.1)


def submit(settings: Settings, path: Path, *flags: str) -> str:
    # --again: tests share one Redis; the refusal of an identical sweep has its own test
    done = cli(settings, "submit", "--again", *flags, str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def wait(store: Store, sweep_id: str, deadline_s: float = SWEEP_DEADLINE_S) -> None:
    """Until every cell of the sweep has ended, following its events."""
    import time

    end = time.monotonic() + deadline_s
    events = store.events(sweep_id, timeout_s=2.0)
    while not all(s.status in FINAL for s in store.states(sweep_id).values()):
        assert time.monotonic() < end, f"sweep {sweep_id} did not end: {store.states(sweep_id)}"
        next(events)
    events.close()


def arms(*names: str, env: dict[str, str] | None = None) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i, name in enumerate(names):
        arm: dict[str, object] = {"name": name, "recipe": "tinymoe-bench-decode",
                                  "params": {"prompt_tokens": 32, "max_tokens": 16,
                                             "warmup_tokens": 4}}
        if i == 0:
            arm["baseline"] = True
            arm["env"] = env or {"MLXCEL_FUSED_MOE": "0"}
        out.append(arm)
    return out
