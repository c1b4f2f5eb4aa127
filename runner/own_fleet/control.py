"""Bring this machine's fleet up, down, and say what runs.

Each process (redis-server, every worker) runs under its own pidfile supervisor
(deploy/supervise.py), which restarts it when it dies and outlives the shell that started it.
Only the coordinator's env file names the signing key: a worker gets the verify key alone, and
neither the supervisors nor the workers inherit the environment of `fleet up`.
"""

import json
import secrets
import shlex
import time
from dataclasses import dataclass
from typing import Any

import redis

from deploy import supervise
from deploy.envfile import render_env
from jobs.errors import UserError
from runner.demo.local_fleet import settings_env, worker_command, worker_env
from runner.demo.redis_server import RedisServer, free_port
from runner.demo.target_repo import lay_out_demo
from runner.own_fleet.home import REDIS, Home, Plan
from workers.shared.leases import live_workers
from workers.shared.private_files import write_private
from workers.shared.settings import Settings, load_settings
from workers.shared.signing import generate

# A worker is ready once its lease is in Redis; on a loaded 2-core machine start-up (Celery's
# imports, the host probe) takes tens of seconds.
READY_WITHIN_S = 120.0


@dataclass(frozen=True)
class Process:
    name: str  # `redis` or the worker's name
    backend: str | None
    pid: int | None  # the supervised process, None when it is not running
    live: bool  # redis answers / the worker holds its lease


def up(home: Home, asked: Plan | None) -> Plan:
    """Start what is not running; `asked` None means "as last time"."""
    RedisServer.binary()  # say what to install before making anything
    plan = _settle_plan(home, asked)
    home.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    home.write_plan(plan)
    if plan.demo_target:
        lay_out_demo(home.demo / "target", plan.models_dir, home.demo / "sweep.yaml",
                     dict.fromkeys(w.backend for w in plan.workers))
    plan.models_dir.mkdir(parents=True, exist_ok=True)
    if not (home.keys / "coordinator.pem").exists():
        generate(home.keys / "coordinator.pem", home.keys / "coordinator.pub")
    server = RedisServer(home.redis_dir, plan.port, plan.password)
    settings = coordinator_settings(home, plan, server.url)
    write_private(home.env_file, render_exports(settings_env(settings, only_set=True)).encode())
    _start(home, REDIS, server.command(), {}, marker=f":{plan.port}")
    _wait_redis(home, server)
    for worker in plan.workers:
        _start(home, f"worker-{worker.name}", worker_command(worker.backend, worker.name),
               worker_env(settings, only_set=True), marker="runner.cli")
    _wait_workers(home, plan, server.url)
    return plan


def down(home: Home) -> int:
    """Stop every worker (each finishes its cell), then Redis; returns how many were running.
    The state stays: the next `fleet up` finds the same sweeps, keys and artifacts."""
    plan = home.read_plan()
    names = [f"worker-{w.name}" for w in plan.workers] if plan else []
    configs = [c for c in (_config(home, n) for n in names) if c]
    redis_config = _config(home, REDIS)
    running = sum(bool(supervise.status(c)["running"]) for c in [*configs, redis_config] if c)
    if supervise.stop_all(configs) or (redis_config and supervise.stop_all([redis_config])):
        raise UserError(f"a process of the fleet in {home.root} did not stop within "
                        f"{supervise.STOP_GRACE_S + 10:.0f} s; see {home.root / 'logs'}")
    return running


def status(home: Home) -> list[Process]:
    plan = home.read_plan()
    if plan is None:
        raise UserError(f"no fleet in {home.root}; start one with `benchfleet fleet up "
                        "--worker NAME:BACKEND` (BENCHFLEET_FLEET_DIR names another)")
    url = redis_url(home, plan)
    redis_pid = _pid(home, REDIS)
    live = _live(url) if redis_pid else set()
    return [Process(REDIS, None, redis_pid, redis_pid is not None and live is not None),
            *(Process(w.name, w.backend, _pid(home, f"worker-{w.name}"),
                      w.name in (live or set())) for w in plan.workers)]


def coordinator_settings(home: Home, plan: Plan, redis_url: str) -> Settings:
    """The fleet's settings over whatever BENCHFLEET_* the user's environment sets (an idle
    gate's wait, tags): one store, one workspace, the fleet's own keys and allow-list."""
    return load_settings(redis_url=redis_url, artifacts=home.root / "artifacts",
                         workspace=home.root / "workspace", models_dir=plan.models_dir,
                         signing_key=home.keys / "coordinator.pem",
                         verify_key=home.keys / "coordinator.pub",
                         allowed_repos=plan.allowed_repos, fleet_dir=home.root)


def new_plan(home: Home, asked: Plan | None, previous: Plan | None) -> Plan:
    """A port and a password once, kept from then on (the user's shell has the URL)."""
    if asked is None:
        raise UserError(f"no fleet in {home.root} yet; name its workers: `benchfleet fleet up "
                        "--worker NAME:BACKEND` (e.g. --worker gpu-1:cuda)")
    port = asked.port or (previous.port if previous else free_port())
    password = previous.password if previous else secrets.token_hex(24)
    return asked.model_copy(update={"port": port, "password": password})


def render_exports(values: dict[str, str]) -> str:
    """`export NAME=VALUE` lines a POSIX shell sources as they are."""
    lines = ["# Written by `benchfleet fleet up`: the coordinator's settings (the signing key",
             "# and the Redis password among them; mode 600). Source it: . THIS_FILE"]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(values.items())]
    return "\n".join(lines) + "\n"


def _settle_plan(home: Home, asked: Plan | None) -> Plan:
    previous = home.read_plan()
    if asked is None and previous is not None:
        return previous
    plan = new_plan(home, asked, previous)
    if previous and not plan.same_fleet(previous) and _any_running(home, previous):
        workers = ", ".join(f"{w.name}:{w.backend}" for w in previous.workers)
        raise UserError(f"a fleet is up in {home.root} with other options (workers {workers}); "
                        "run `benchfleet fleet down` first, or `benchfleet fleet up` alone to "
                        "keep it as it is")
    if previous:
        for gone in {w.name for w in previous.workers} - {w.name for w in plan.workers}:
            home.supervised(f"worker-{gone}").unlink(missing_ok=True)
    return plan


def _start(home: Home, name: str, command: list[str], env: dict[str, str], marker: str) -> None:
    env_file = home.supervised(name).with_suffix(".env")
    write_private(env_file, render_env(env, by="benchfleet fleet up").encode())
    config = {"command": command, "env_file": str(env_file), "marker": marker,
              "pidfile": str(home.supervised(name).with_suffix(".pid")),
              "worker_pidfile": str(home.supervised(name).with_suffix(".child.pid")),
              "log": str(home.log(name)), "workdir": str(home.root)}
    home.supervised(name).write_text(json.dumps(config, indent=1) + "\n")
    if supervise.start(home.supervised(name), quiet=True):
        raise UserError(f"{name} did not start; see {home.log(name)}")


def _wait_redis(home: Home, server: RedisServer) -> None:
    try:
        server.wait_ready()
    except redis.RedisError:
        raise UserError(f"redis-server did not answer on 127.0.0.1:{server.port}; see "
                        f"{home.redis_dir / 'redis.log'} (another server on that port? "
                        "`benchfleet fleet up --port N` picks another)") from None


def _wait_workers(home: Home, plan: Plan, url: str) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    waiting = {w.name for w in plan.workers}
    while waiting := waiting - (_live(url) or set()):
        if time.monotonic() > deadline:
            logs = ", ".join(str(home.log(f"worker-{n}")) for n in sorted(waiting))
            raise UserError(f"worker(s) {', '.join(sorted(waiting))} did not come up within "
                            f"{READY_WITHIN_S:.0f} s; see {logs}")
        time.sleep(0.2)  # bounds how often we ask Redis; the workers' start-up is the wait


def _live(url: str) -> set[str] | None:
    """The names of the live workers; None when Redis does not answer."""
    try:
        client = redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=2)
        return set(live_workers(client))
    except redis.ConnectionError:
        return None


def _config(home: Home, name: str) -> dict[str, Any] | None:
    path = home.supervised(name)
    return supervise.load(path) if path.exists() else None


def _pid(home: Home, name: str) -> int | None:
    config = _config(home, name)
    return supervise.status(config)["worker_pid"] if config else None


def _any_running(home: Home, plan: Plan) -> bool:
    names = [REDIS, *(f"worker-{w.name}" for w in plan.workers)]
    return any(_pid(home, n) for n in names)


def redis_url(home: Home, plan: Plan) -> str:
    return RedisServer(home.redis_dir, plan.port, plan.password).url
