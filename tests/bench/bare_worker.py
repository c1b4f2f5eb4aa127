"""Bare Celery, the baseline: one task that runs a command and waits for it, on the same
Redis, with the pool and flags benchfleet's worker uses (solo, prefetch 1, no heartbeat,
gossip or mingle) and nothing else: no result backend, no state, no artifacts (`run`).

A second task, `bare.stored`, is the floor under no-op throughput: the same command, and what
a benchfleet worker keeps of each attempt, done the plainest way (`stored`), run by a bare
worker of its own.

`celery -A tests.bench.bare_worker worker` finds `app` here (BARE_REDIS_URL names Redis).
"""

import hashlib
import json
import os
import subprocess
import time
import uuid
from functools import cache
from pathlib import Path

import redis
from celery import Celery

BARE_QUEUE = "bare"


def bare_app(url: str) -> Celery:
    app = Celery("bare", broker=url, set_as_current=False)
    app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=1,
                    broker_connection_retry_on_startup=True)
    app.task(name="bare.run")(run)
    app.task(name="bare.stored")(stored)
    return app


def run(argv: list[str], cwd: str | None, env: dict[str, str], out: str) -> int:
    with open(out, "wb") as f:
        return subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, stdout=f,
                              stderr=subprocess.STDOUT).returncode


def stored(argv: list[str], cwd: str | None, env: dict[str, str], root: str, sweep_id: str,
           cell_id: str, url: str) -> int:
    """Run the command and keep what a stored benchfleet attempt keeps, with none of its
    guarantees (no lease, cancel check, signature, hooks, events or parser): the cell marked
    running and then done in Redis, one round trip each; its stdout and stderr in files of a
    new attempt folder with an empty out/; the output and the run as JSON; a manifest of
    their sha256 that benchfleet's store reads; the folder moved into place by one rename, and
    an accepted marker beside it. The same 9 new files and folders as a no-op attempt."""
    states, key = _redis(url), f"bare-stored:{sweep_id}:states"
    states.hset(key, cell_id, "running")
    staging = Path(root, ".staging", uuid.uuid4().hex)
    (staging / "out").mkdir(parents=True)
    started = time.time()
    with open(staging / "measure.stdout.txt", "wb") as out, \
            open(staging / "measure.stderr.txt", "wb") as err:
        code = subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, stdout=out,
                              stderr=err).returncode
    _write_attempt(staging, {"sweep_id": sweep_id, "cell_id": cell_id, "argv": argv,
                             "cwd": cwd, "returncode": code, "started": started,
                             "ended": time.time()})
    _publish(staging, Path(root, sweep_id, cell_id))
    states.hset(key, cell_id, "done")
    return code


def _write_attempt(staging: Path, ran: dict[str, object]) -> None:
    """The parsed output, the run and their manifest, as an attempt's JSON files."""
    lines = (staging / "measure.stdout.txt").read_text().splitlines()
    (staging / "parsed.json").write_text(json.dumps({"lines": lines}, indent=1))
    (staging / "result.json").write_text(json.dumps(ran, indent=1))
    files = {p.name: {"sha256": hashlib.sha256(data := p.read_bytes()).hexdigest(),
                      "bytes": len(data)} for p in sorted(staging.iterdir()) if p.is_file()}
    (staging / "manifest.json").write_text(json.dumps({"files": files}, indent=1))


def _publish(staging: Path, cell: Path) -> None:
    """The attempt moved into its cell's folder whole, and the accepted marker beside it."""
    cell.mkdir(parents=True)
    os.rename(staging, cell / "attempt-1")
    temp = cell / f".accepted.json.{os.getpid()}.tmp"
    temp.write_text(json.dumps({"attempt": 1, "status": "done"}))
    os.replace(temp, cell / "accepted.json")


@cache
def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


app = bare_app(os.environ.get("BARE_REDIS_URL", "redis://127.0.0.1:6379/0"))
