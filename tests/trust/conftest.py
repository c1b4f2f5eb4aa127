"""A fleet to attack: a private Redis with a password, worker processes whose environment holds
secrets, the stand-in target in their allow-list, and the attacker's tools — a message
written straight into Redis, a key that is not the coordinator's, a sweep planted in Redis
as a coordinator that skipped its own checks would."""

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from jobs.spec.cells import Cell, expand
from jobs.spec.envelope import encode
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.demo.local_fleet import LocalFleet, settings_env
from runner.demo.redis_server import RedisServer
from runner.demo.target_repo import DEMO_MODELS, make_models, make_target_repo
from runner.submit import resolve_commits, sign_all
from tests.support.fleet import arms, fleet_settings, until_live
from tests.support.waits import eventually
from workers.shared import redis_keys
from workers.shared.catalogue import SHIPPED
from workers.shared.messages import GroupMessage, Signed, publish
from workers.shared.queues import cell_queue
from workers.shared.settings import Settings
from workers.shared.signing import signer
from workers.shared.state import Store

PASSWORD = "trust-redis-pw-7f3a91"
# What a lab host's worker has in its environment and no command may see.
SECRETS = {"HF_TOKEN": "hf_trustTOKEN5d1c", "GITHUB_TOKEN": "ghp_trustTOKEN9e2b",
           "AWS_SECRET_ACCESS_KEY": "aws-trust-SECRET-44aa", "LAB_API_KEY": "lab-trust-KEY-0b8d",
           "DB_PASSWORD": "db-trust-PASSWORD-77c1"}
# Long enough for a one-cell sweep on a busy 2-core machine; bounded, never a fixed sleep.
DEADLINE_S = 120.0


@dataclass
class Fleet:
    root: Path
    settings: Settings
    workers: LocalFleet
    target: Path
    store: Store

    def cli(self, *args: str, settings: Settings | None = None) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **settings_env(settings or self.settings), "COLUMNS": "250"}
        return subprocess.run([sys.executable, "-m", "runner.cli", *args], capture_output=True,
                              text=True, env=env, timeout=120)

    def sweep_file(self, name: str, backend: str = "cpu", repo: Path | None = None,
                   env: dict[str, str] | None = None, **extra: object) -> Path:
        """A one-cell sweep of the stand-in; `extra` replaces any of its keys."""
        spec: dict[str, object] = {"name": name, "target": {"repo": str(repo or self.target),
                                                           "commits": "main"},
                                   "models": ["tinymoe-a3"],
                                   "backends": {backend: {"build": "tinymoe-build"}},
                                   "arms": arms("gather", env=env), "n": 1, "warmup": 0}
        spec.update(extra)
        path = self.root / f"{name}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        return path

    def submit(self, path: Path, *flags: str) -> str:
        done = self.cli("submit", "--again", *flags, str(path))  # one Redis for all tests
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def plant(self, name: str, change: Callable[[Cell], Cell], backend: str = "cpu",
              queue: str | None = None) -> Cell:
        """A sweep saved and queued as a coordinator that skipped its checks would: its cell
        changed by `change`, signed with the coordinator's own key, queued on `queue` (by
        default the one its route names)."""
        sweep, _ = load(Sweep, self.sweep_file(name, backend).read_text(), name)
        repo = str(self.target)
        commits = resolve_commits(repo, ["main"])
        sweep = sweep.model_copy(update={"target": sweep.target.model_copy(
            update={"repo": repo, "commits": [commits["main"]]})})
        cells = [change(c) for c in expand(sweep)]
        sweep_id = f"{name}-{time.time_ns()}"
        signed = sign_all(signer(self.settings.signing_key), sweep_id, 0, "planted", cells)
        self.store.save_sweep(sweep_id, sweep, cells, "planted", "planted", signed, commits)
        self.forge(sweep_id, queue or cell_queue(cells[0]), [signed[c.id] for c in cells])
        return cells[0]

    def forge(self, sweep_id: str, queue: str, items: list[Signed]) -> None:
        """A message written straight into Redis, in Celery's wire format."""
        publish(self.store.r, [GroupMessage(sweep_id, queue, [i.claimed_cell() for i in items],
                                            items)])

    def reported(self, match: Callable[[dict[str, str]], bool], count: int = 1
                 ) -> list[dict[str, str]]:
        """The refused log's entries that match, once there are `count` of them."""
        def found() -> list[dict[str, str]]:
            entries = [r for r in self.store.refused() if match(r)]
            return entries if len(entries) >= count else []

        return eventually(found, DEADLINE_S, f"{count} matching refusals reported "
                          f"(refused: {self.store.refused()})", every_s=0.1)

    def attempts(self, sweep_id: str) -> dict[str, str]:
        return self.store.r.hgetall(redis_keys.sweep(sweep_id, "attempts"))


def envelope(sweep_id: str, cell: Cell, generation: int = 0) -> bytes:
    return encode(sweep_id, generation, "planted", cell)


# A build step that tries its worker's (its parent's) environment and memory.
PEEK = ("echo parent $PPID; cat /proc/$PPID/environ || echo environ refused; "
        "(exec 3< /proc/$PPID/mem) && echo mem opened || echo mem refused")


def catalogue(path: Path) -> Path:
    """The shipped catalogue plus builds that print their environment (one sees only what
    the worker lets through, one names HF_TOKEN in `pass_env`) or peek into their worker's."""
    data = yaml.safe_load(SHIPPED.read_text())
    build = data["recipes"]["tinymoe-build"]
    steps = [{"name": "env", "command": ["env"]}, {"name": "build", "command": build["command"]}]
    data["recipes"]["env-dump-build"] = {"kind": "build", "steps": steps, "timeout_s": 300}
    data["recipes"]["pass-env-build"] = {"kind": "build", "steps": steps, "timeout_s": 300,
                                         "pass_env": ["HF_TOKEN"]}
    peek = {"name": "peek", "command": ["sh", "-c", PEEK]}
    data["recipes"]["peek-build"] = {"kind": "build", "steps": [peek, steps[1]],
                                     "timeout_s": 300}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@contextmanager
def trust_fleet(root: Path, workers: list[tuple[str, str]], redis_url: str | None = None,
                wrap: tuple[str, ...] = (), **overrides: object) -> Iterator[Fleet]:
    """Workers (backend, name) with the secrets in their environment, against a private
    Redis that requires a password (or `redis_url`, when the caller runs its own); `wrap`
    runs each worker inside another command."""
    target = root / "target"
    make_target_repo(target)
    make_models(root / "models", DEMO_MODELS)
    with ExitStack() as stack:
        if redis_url is None:
            redis_url = stack.enter_context(RedisServer(root / "redis", password=PASSWORD)).url
        values: dict[str, object] = {"catalogue": catalogue(root / "catalogue.yaml"),
                                     "allowed_repos": [str(target)], **overrides}
        settings = fleet_settings(root, redis_url, **values)
        fleet = LocalFleet(settings, root / "logs", env=SECRETS)
        stack.callback(fleet.stop)
        for backend, name in workers:
            fleet.start(backend, name, wrap=wrap)
        store = Store.connect(settings.redis_url)
        until_live(settings, *(name for _, name in workers))
        yield Fleet(root, settings, fleet, target, store)


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def read_all(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def dump(data: object) -> str:
    return json.dumps(data, indent=1)
