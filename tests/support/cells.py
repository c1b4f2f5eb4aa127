"""A small signed sweep in a private Redis database, and the values hooks receive: for the unit
tests of the hooks and the shared pieces (real Redis, real keys, real envelopes)."""

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from jobs.spec.cells import Cell, expand
from jobs.spec.envelope import decode, spec_hash
from jobs.spec.recipes import Invocation
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.demo.redis_server import RedisServer
from runner.submit import sign_all
from workers.execute import Command, Files, Role
from workers.in_flight import Arrival, Attempt, Group, SignedCell
from workers.shared.messages import Signed
from workers.shared.signing import Signer, Verifier, generate, signer, verifier
from workers.shared.state import Store

SHA = "a1" * 20
# A database of the session's Redis no fleet uses: each test starts it empty.
UNIT_DB = 7
SPEC = f"""\
name: hooks
target: {{repo: /srv/git/tinymoe, commits: ["{SHA}"]}}
models: [tinymoe-a3]
backends: {{cpu: {{build: tinymoe-build}}}}
arms:
  - {{name: base, recipe: tinymoe-bench-decode, baseline: true}}
  - {{name: fused, recipe: tinymoe-bench-decode}}
n: 2
"""


@dataclass(frozen=True)
class Submitted:
    """A sweep saved in Redis as `benchfleet submit` saves it: every cell queued, signed."""

    store: Store
    url: str
    sweep_id: str
    cells: list[Cell]
    signed: dict[str, Signed]
    key: Signer
    verify: Verifier

    def group(self, task_id: str = "task-1", cells: list[Cell] | None = None) -> Group:
        """A message of these cells, as the signature hook leaves it (every one verified)."""
        items = tuple(self.signed[c.id] for c in (cells or self.cells))
        return Group(self.sweep_id, task_id, items,
                     tuple(SignedCell(s, decode(s.envelope.encode())) for s in items))

    def arrival(self, index: int = 0, group: Group | None = None) -> Arrival:
        group = group or self.group()
        return Arrival(group, group.cells[index])

    def attempt(self, index: int = 0, number: int = 1, group: Group | None = None) -> Attempt:
        return self.arrival(index, group).taken(number)


@pytest.fixture
def unit_redis(redis_server: RedisServer) -> Iterator[tuple[redis.Redis, str]]:
    url = redis_server.url.rsplit("/", 1)[0] + f"/{UNIT_DB}"
    client = redis.Redis.from_url(url, decode_responses=True)
    client.flushdb()
    yield client, url
    client.close()


def submit(client: redis.Redis, url: str, keys: Path, text: str = SPEC,
           sweep_id: str = "hooks-1") -> Submitted:
    """Save and sign a sweep as `benchfleet submit` does (without publishing its messages)."""
    if not (keys / "c.pub").exists():
        generate(keys / "c.pem", keys / "c.pub")
    key, verify = signer(keys / "c.pem"), verifier(keys / "c.pub")
    sweep = load(Sweep, text, "hooks.yaml")[0]
    cells, spec = expand(sweep), spec_hash(sweep)
    signed = sign_all(key, sweep_id, 0, spec, cells)
    store = Store(client)
    store.save_sweep(sweep_id, sweep, cells, text, spec, signed, {})
    return Submitted(store, url, sweep_id, cells, signed, key, verify)


@pytest.fixture
def submitted(unit_redis: tuple[redis.Redis, str], tmp_path: Path) -> Submitted:
    return submit(*unit_redis, tmp_path / "keys")


def python_command(tmp: Path, code: str, role: Role = "measure", label: str = "measure",
                   timeout_s: float = 60.0, **call: object) -> Command:
    """A real command (this Python running `code`), logging under `tmp`."""
    tmp.mkdir(parents=True, exist_ok=True)
    invocation = Invocation(argv=[sys.executable, "-c", code], env={}, timeout_s=timeout_s,
                            **call)  # type: ignore[arg-type]
    files = Files(tmp / f"{label}.stdout.txt", tmp / f"{label}.stderr.txt")
    return Command(role, label, invocation, tmp, files, tmp)
