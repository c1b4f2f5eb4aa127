"""Worker processes on this machine, started and stopped as a group (demo and tests)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from workers.shared.settings import Settings

# How long a worker gets to finish its cell and exit after SIGTERM (Celery's warm shutdown).
STOP_GRACE_S = 30.0


def settings_env(settings: Settings) -> dict[str, str]:
    """The settings as the BENCHFLEET_* variables a worker process reads."""
    env = {}
    for name, value in settings.model_dump(exclude_none=True).items():
        text = json.dumps(value) if isinstance(value, list) else str(value)
        env[f"BENCHFLEET_{name.upper()}"] = text
    return env


class LocalFleet:
    def __init__(self, settings: Settings, logs: Path, env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.logs = logs
        self.env = env or {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, backend: str, name: str, settings: Settings | None = None,
              wrap: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
        """A worker process; `wrap` runs it inside another command (`ip netns exec NS`)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"worker-{name}-{backend}.log").open("ab")
        proc = subprocess.Popen(
            [*wrap, sys.executable, "-m", "runner.cli", "worker", "--backend", backend,
             "--name", name],
            env={**os.environ, **settings_env(settings or self.settings), **self.env},
            stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        key = f"{name}/{backend}"
        self.procs[key if key not in self.procs else f"{key}#{len(self.procs)}"] = proc
        return proc

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
