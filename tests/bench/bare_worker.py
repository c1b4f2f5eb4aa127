"""Bare Celery, the baseline: one task that runs a command and waits for it, on the same
Redis, with the pool and flags benchfleet's worker uses (solo, prefetch 1, no heartbeat,
gossip or mingle) and nothing else: no result backend, no state, no artifacts.

`celery -A tests.bench.bare_worker worker` finds `app` here (BARE_REDIS_URL names Redis).
"""

import os
import subprocess

from celery import Celery

BARE_QUEUE = "bare"


def bare_app(url: str) -> Celery:
    app = Celery("bare", broker=url, set_as_current=False)
    app.conf.update(task_ignore_result=True, worker_prefetch_multiplier=1,
                    broker_connection_retry_on_startup=True)
    app.task(name="bare.run")(run)
    return app


def run(argv: list[str], cwd: str | None, env: dict[str, str], out: str) -> int:
    with open(out, "wb") as f:
        return subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, stdout=f,
                              stderr=subprocess.STDOUT).returncode


app = bare_app(os.environ.get("BARE_REDIS_URL", "redis://127.0.0.1:6379/0"))
