"""A small fleet for one fault: private Redis with AOF, the stand-in target, workers started and
killed at will, and the checks every fault must pass (every cell final, at most one accepted
measurement per cell and generation, every stored artifact verifying against its sha256)."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest
import yaml

from jobs.record.attempts import FINAL
from runner.demo.local_fleet import LocalFleet
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models, make_target_repo
from tests.support.fleet import cli, fleet_settings
from tests.support.waits import eventually
from workers import descendants
from workers.shared.settings import Settings
from workers.shared.state import Store
from workers.shared.stores import CorruptArtifact, get_json
from workers.shared.stores.local import LocalStore

CATALOGUE = Path(__file__).parent / "catalogue.yaml"
# A fault scenario that has not ended by then has failed (bounded, never a fixed sleep).
DEADLINE_S = 180.0
# How long a done cell's marker may follow its state (a worker's next few milliseconds, on a
# loaded host more).
MARKER_S = 15.0


@dataclass
class Lab:
    root: Path
    server: RedisServer
    settings: Settings
    fleet: LocalFleet
    repo: Path
    shas: list[str]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return Store.connect(self.settings.redis_url)

    def sweep(self, name: str, recipe: str = "bench", build: str = "tinymoe-build",
              n: int = 3, warmup: int = 0, params: dict[str, object] | None = None,
              backend: str = "cpu", arms: int = 1) -> str:
        spec = {"name": name, "target": {"repo": str(self.repo), "commits": "main"},
                "models": ["tinymoe-a3"], "backends": {backend: {"build": build}},
                "arms": [{"name": f"arm{i}", "recipe": recipe, "baseline": i == 0,
                          "params": params or {}} for i in range(arms)],
                "n": n, "warmup": warmup}
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        # --again: one Redis for all tests. --wait-for-worker: these tests start, kill and
        # restart workers around their submits on purpose.
        done = cli(self.settings, "submit", "--again", "--wait-for-worker", str(path))
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def wait(self, sweep_id: str, until: Callable[[dict[str, str]], bool] | None = None,
             deadline_s: float = DEADLINE_S) -> float:
        """Seconds until `until(states)` (default: every cell final), following events."""
        start = time.monotonic()
        events = self.store.events(sweep_id, timeout_s=1.0)
        check = until or (lambda states: all(s in FINAL for s in states.values()))
        while not check({c: s.status for c, s in self.store.states(sweep_id).items()}):
            assert time.monotonic() - start < deadline_s, (
                f"{sweep_id} did not get there: {self.store.states(sweep_id)}")
            next(events)
        events.close()
        return time.monotonic() - start

    def verify(self, sweep_id: str) -> dict[str, int]:
        """The checks every fault ends with; returns the accepted attempt of every done cell."""
        store, artifacts = self.store, LocalStore(Path(self.settings.artifacts))
        states = store.states(sweep_id)
        assert all(s.status in FINAL for s in states.values()), states
        accepted = {}
        for entry in store.log(sweep_id):
            if entry["status"] == "done":
                key = (entry["cell"], entry["generation"])
                assert key not in accepted, f"two accepted measurements for {key}"
                accepted[key] = int(entry["attempt"])
        for cell_id, state in states.items():
            for attempt in artifacts.attempts(sweep_id, cell_id):
                try:
                    artifacts.read(sweep_id, cell_id, attempt)
                except CorruptArtifact as error:
                    raise AssertionError(f"artifact does not verify: {error}") from None
            if state.status == "done":
                # Redis settles a cell first and its worker writes the store's marker just
                # after (workers/hooks/lease.py, settle): the last cell's marker may still be
                # on its way when its state reads done.
                where = f"{sweep_id}/{cell_id}/accepted.json"
                marker = eventually(partial(get_json, artifacts, where), MARKER_S, where)
                assert marker == {"attempt": state.attempt, "status": "done",
                                  "generation": state.generation}, marker
                # A sweep put back from the store has no log of what was done before.
                assert accepted.get((cell_id, state.generation), state.attempt) == state.attempt
        return {cell: a for (cell, _), a in accepted.items()}


@contextmanager
def lab(root: Path, bind: tuple[str, ...] = ("127.0.0.1",), password: str | None = None,
        **settings: object) -> Iterator[Lab]:
    with RedisServer(root / "redis", bind=bind, password=password) as server, \
            lab_on(root, server, server.url, **settings) as lab_:
        yield lab_


@contextmanager
def lab_on(root: Path, server: RedisServer, redis_url: str, **settings: object
           ) -> Iterator[Lab]:
    """A lab on a Redis already running (`redis_url` may name it through Sentinel)."""
    repo = root / "target"
    shas = make_target_repo(repo)
    make_models(root / "models", DEMO_MODELS)
    config = fleet_settings(root, redis_url, catalogue=CATALOGUE, **settings)
    fleet = LocalFleet(config, root / "logs")
    try:
        yield Lab(root, server, config, fleet, repo, shas)
    finally:
        fleet.stop()
        _remove_cgroups(config, fleet)


def _remove_cgroups(settings: Settings, fleet: LocalFleet) -> None:
    """The commands' cgroups a SIGKILLed worker left (empty once the lab is down): a worker
    removes its own only when it stops."""
    for key in fleet.procs:
        path = descendants.cgroup_path(Path(settings.workspace) / "procs" / key.split("/")[0])
        with suppress(OSError):
            if path is not None:
                path.rmdir()


@contextmanager
def small_tmpfs(where: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs at `where`, for a store that fills (the test is skipped where mounting
    is not allowed); unmounted after."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def descendants_gone(pids: list[int]) -> bool:
    return all(gone(p) for p in pids)


def commands_of(worker_pid: int) -> list[int]:
    """Pids of processes whose parent is the worker (its running command, if any)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == worker_pid:
                found.append(int(entry.name))
    return found


def wait_for_command(worker_pid: int, text: str, deadline_s: float = 60.0) -> list[int]:
    """Until the worker runs a command whose command line holds `text`; its pids."""
    return eventually(lambda: [p for p in commands_of(worker_pid) if text.encode() in _cmdline(p)],
                      deadline_s, f"worker {worker_pid} runs a command with {text!r}")


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie not yet reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def python() -> str:
    return sys.executable


def read_log(lab: Lab, sweep_id: str) -> list[dict[str, object]]:
    return [json.loads(json.dumps(e)) for e in lab.store.log(sweep_id)]
