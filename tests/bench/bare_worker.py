"""Bare Celery, the baseline: one task that runs a command, on the same Redis, solo pool."""

import os
import subprocess

from celery import Celery

app = Celery("bare", broker=os.environ["BARE_REDIS_URL"], backend=os.environ["BARE_REDIS_URL"])
app.conf.update(worker_prefetch_multiplier=1, task_acks_late=True,
                broker_connection_retry_on_startup=True)


@app.task(name="bare.run")
def run(argv: list[str]) -> tuple[int, str]:
    done = subprocess.run(argv, capture_output=True, text=True)
    return done.returncode, done.stderr
