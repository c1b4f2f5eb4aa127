"""Celery's own tools on a benchfleet fleet: `celery -A workers.app inspect ping` finds the
worker, and Flower, fed by the workers' task events, lists the workers and every cell."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from runner import processes
from runner.demo.local_fleet import settings_env
from runner.demo.redis_server import free_port
from tests.faults.harness import lab

pytestmark = pytest.mark.integration
pytest.importorskip("flower")


def test_flower_lists_workers_and_cells(tmp_path: Path) -> None:
    with lab(tmp_path) as lab_:
        lab_.fleet.start("cpu", "flowered")
        log = lab_.root / "logs" / "worker-flowered-cpu.log"
        _until(lambda: log.exists() and "ready." in log.read_text())
        env = {**os.environ, **settings_env(lab_.settings), "FLOWER_UNAUTHENTICATED_API": "true"}
        ping = subprocess.run([sys.executable, "-m", "celery", "-A", "workers.app", "inspect",
                               "ping", "--timeout", "10"], capture_output=True, text=True,
                              env=env, timeout=60)
        assert "flowered.cpu@" in ping.stdout and "pong" in ping.stdout, ping.stdout + ping.stderr
        port = free_port()
        flower = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "flower",
                                   f"--port={port}", "--address=127.0.0.1"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _until(lambda: _get(port, "/healthcheck") == "OK")
            sweep_id = lab_.sweep("flower", n=3, arms=2)
            lab_.wait(sweep_id)
            cells = {c.id for c in lab_.store.sweep(sweep_id)[1]}
            tasks = _until(lambda: _cells_seen(port, cells))
            assert {t["state"] for t in tasks.values()} == {"SUCCESS"}
            assert {t["worker"] for t in tasks.values()} == {next(iter(tasks.values()))["worker"]}
            assert "flowered" in next(iter(tasks.values()))["worker"]
            workers = json.loads(_get(port, "/api/workers?refresh=1") or "{}")
            assert any("flowered" in name for name in workers), workers
        finally:
            processes.stop(flower, grace_s=30)


def _cells_seen(port: int, cells: set[str]) -> dict[str, dict[str, str]] | None:
    raw = _get(port, "/api/tasks?taskname=benchfleet.cell")
    tasks = json.loads(raw) if raw else {}
    seen = {t: v for t, v in tasks.items() if t.split(":")[1] in cells}
    return seen if {t.split(":")[1] for t in seen} == cells else None


def _get(port: int, path: str) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
            return str(reply.read().decode())
    except OSError:
        return None


def _until(check, seconds: float = 60.0):  # type: ignore[no-untyped-def]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.5)  # waiting on Flower's own event stream, not standing in for work
    raise AssertionError(f"not seen within {seconds} s")
