"""Worker processes on this machine, started and stopped as a group (demo and tests)."""

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

from workers.shared.settings import Settings

# How long a worker gets to finish its cell and exit after SIGTERM (Celery's warm shutdown).
STOP_GRACE_S = 30.0


# Only the coordinator signs: a worker that held the private key could be made to sign work
# by any command it runs as root (such a command reads its worker's /proc/PID/environ).
COORDINATOR_ONLY = "BENCHFLEET_SIGNING_KEY"


def settings_env(settings: Settings, only_set: bool = False) -> dict[str, str]:
    """The settings as the BENCHFLEET_* variables a process reads; `only_set`: those given,
    from the environment or the caller, not the defaults."""
    env = {}
    for name, value in settings.model_dump(exclude_none=True, exclude_unset=only_set).items():
        text = json.dumps(value) if isinstance(value, list) else str(value)
        env[f"BENCHFLEET_{name.upper()}"] = text
    return env


def worker_env(settings: Settings, only_set: bool = False) -> dict[str, str]:
    """What a worker process reads: the settings, never the signing key."""
    env = settings_env(settings, only_set)
    env.pop(COORDINATOR_ONLY, None)
    return env


def worker_command(backend: str, name: str) -> list[str]:
    return [sys.executable, "-m", "runner.cli", "worker", "--backend", backend, "--name", name]


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
        inherited = {k: v for k, v in os.environ.items() if k != COORDINATOR_ONLY}
        proc = subprocess.Popen(
            [*wrap, *worker_command(backend, name)],
            env={**inherited, **worker_env(settings or self.settings), **self.env},
            stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        key = f"{name}/{backend}"
        self.procs[key if key not in self.procs else f"{key}#{len(self.procs)}"] = proc
        return proc

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                # The whole session: a `wrap` (faketime, ip netns exec) may not pass it on.
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
