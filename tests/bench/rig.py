"""The benchmark's private world: one redis-server, the stand-in target, keys, a catalogue,
benchfleet workers and bare Celery workers, all on this machine, and the kernel's process
events to see when their commands start."""

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis.connection
import yaml

from jobs.record.attempts import FINAL
from jobs.spec.cells import Cell
from runner import processes
from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models, make_target_repo
from runner.submit import submit
from tests.bench.bare_worker import BARE_QUEUE, bare_app
from tests.bench.procwatch import ProcWatch
from workers.shared.catalogue import SHIPPED
from workers.shared.settings import Settings
from workers.shared.signing import generate
from workers.shared.state import Store, lua

HERE = Path(__file__).parent
REPO = HERE.parents[1]
# The idle gate capped at nothing: threshold 0 is never met, so the gate reads load1 once and
# lets the run go at once; what it waited is read from each attempt and reported apart.
GATE_THRESHOLD, GATE_MAX_WAIT_S = 0.0, 0.0
READY_S = 120.0
# What writes a message into a queue: kombu's LPUSH (bare Celery), and submit's queue_once
# script, named by its SHA1 as redis-py's EVALSHA sends it (its LPUSH runs inside Redis).
_LPUSH = b"$5\r\nLPUSH\r\n"
_QUEUE_ONCE = hashlib.sha1(lua("queue_once", head=False).encode()).hexdigest().encode()


@dataclass
class Rig:
    root: Path
    server: RedisServer
    watch: ProcWatch
    settings: Settings = field(init=False)
    shas: list[str] = field(init=False)
    fleet: LocalFleet = field(init=False)
    bare: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        root = self.root
        self.shas = make_target_repo(root / "target")
        make_models(root / "models", DEMO_MODELS)
        keys = root / "keys"
        generate(keys / "coordinator.pem", keys / "coordinator.pub")
        self.settings = Settings(
            redis_url=self.server.url, artifacts=root / "artifacts",
            workspace=root / "workspace", models_dir=root / "models",
            catalogue=catalogue(root / "catalogue.yaml"), signing_key=keys / "coordinator.pem",
            verify_key=keys / "coordinator.pub", host_lock=root / "host.lock",
            allowed_repos=[str(root / "target")],
            idle_load1=GATE_THRESHOLD, idle_max_wait_s=GATE_MAX_WAIT_S)
        self.fleet = LocalFleet(self.settings, root / "logs")
        self.store = Store.connect(self.server.url)
        self.app = bare_app(self.server.url)

    @property
    def target(self) -> Path:
        return self.root / "target"

    def worker(self, backend: str, name: str) -> int:
        """A `benchfleet worker` process, as deploy runs it; its pid."""
        proc = self.fleet.start(backend, name)
        self.watch.follow(proc.pid)
        return proc.pid

    def bare_worker(self, queue: str = BARE_QUEUE) -> int:
        """A minimal Celery worker with the same pool and flags as benchfleet's; its pid,
        once it has run a first task."""
        log = (self.root / "logs" / f"bare-{queue}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.bench.bare_worker", "worker",
             "--pool", "solo", "--concurrency", "1", "--prefetch-multiplier", "1",
             "--queues", queue, "--hostname", f"{queue}@%h", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
            env={**os.environ, "BARE_REDIS_URL": self.server.url}, cwd=REPO,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.bare.append(proc)
        self.watch.follow(proc.pid)
        t0 = time.monotonic_ns()
        self.send_bare(["true"], queue=queue)
        self.watch.wait_exec(proc.pid, t0, READY_S)
        return proc.pid

    def send_bare(self, argv: list[str], cwd: str | None = None,
                  env: dict[str, str] | None = None, queue: str = BARE_QUEUE) -> int:
        """Queue one bare task; the monotonic time its message went to Redis."""
        with sent() as clock:
            self.app.send_task("bare.run", args=[argv, cwd, env or {},
                                                 str(self.root / "bare-output.txt")],
                               queue=queue)
        return clock.ns

    def send_stored(self, argv: list[str], sweep_id: str, cell_id: str,
                    queue: str = BARE_QUEUE) -> None:
        """Queue one bare task that also stores what an attempt stores (`bare.stored`), in
        the rig's own store folder, where the worker stores its attempts."""
        self.app.send_task("bare.stored", args=[argv, None, {}, str(self.settings.artifacts),
                                                sweep_id, cell_id, self.server.url],
                           queue=queue)

    def sweep_file(self, spec: dict[str, object]) -> Path:
        path = self.root / "sweeps" / f"{spec['name']}-{time.monotonic_ns()}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    def submit(self, spec: dict[str, object]) -> tuple[str, list[Cell], int]:
        """Submit in this process; the monotonic time its messages went to Redis."""
        path = self.sweep_file(spec)
        with sent() as clock:
            sweep_id, cells = submit(path, self.settings, again=True)
        return sweep_id, cells, clock.ns

    def wait_final(self, sweep_id: str, timeout_s: float = 600.0) -> None:
        """Until every cell of the sweep has ended, following its events."""
        end = time.monotonic() + timeout_s
        events = self.store.events(sweep_id, timeout_s=1.0)
        try:
            while not all(s.status in FINAL for s in self.store.states(sweep_id).values()):
                if time.monotonic() > end:
                    raise TimeoutError(f"sweep {sweep_id} did not end in {timeout_s:g} s")
                next(events)
        finally:
            events.close()

    def stop(self) -> None:
        self.fleet.stop()
        for proc in self.bare:  # all asked at once, then each waited for
            proc.terminate()
        for proc in self.bare:
            processes.stop(proc, grace_s=30)


class _Clock:
    ns = 0


@contextlib.contextmanager
def sent() -> Iterator[_Clock]:
    """The moment this process last wrote a message to Redis: taken in redis-py, which both
    benchfleet and kombu (bare Celery) write through, right before the bytes go out. Taking
    the time after the call returns is not safe: a fast worker can start the command first."""
    clock = _Clock()
    original = redis.connection.AbstractConnection.send_packed_command

    def send(self: redis.connection.AbstractConnection, command: Any,
             check_health: bool = True) -> None:
        chunks = [command] if isinstance(command, bytes | str) else command
        if any(_queues(c.encode() if isinstance(c, str) else bytes(c)) for c in chunks):
            clock.ns = time.monotonic_ns()
        original(self, command, check_health)

    redis.connection.AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
    try:
        yield clock
    finally:
        redis.connection.AbstractConnection.send_packed_command = original  # type: ignore[method-assign]
    if not clock.ns:
        raise RuntimeError("no LPUSH or queue_once went to Redis: the messages were written "
                           "another way")


def _queues(chunk: bytes) -> bool:
    return _LPUSH in chunk or _QUEUE_ONCE in chunk


def catalogue(path: Path) -> Path:
    """The shipped catalogue, every recipe and provenance probe as it ships, plus the
    benchmark's own two recipes (a no-op and a spin) from tests/bench/catalogue.yaml."""
    shipped = yaml.safe_load(SHIPPED.read_text())
    extra = yaml.safe_load((HERE / "catalogue.yaml").read_text())
    shipped["recipes"].update(extra["recipes"])
    path.write_text(yaml.safe_dump(shipped, sort_keys=False))
    return path


def read_proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


def load1() -> float:
    return os.getloadavg()[0]
