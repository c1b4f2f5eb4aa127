"""Run one command: output straight to files, a timeout that kills its whole process group.

While the command runs the worker only waits on it: no pipes to pump, no polling.
"""

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jobs.attempts import Run
from jobs.readings import RunOutput
from jobs.recipes import Invocation
from workers.fleet.state import now
from workers.host import load1

# How long a timed-out command gets after SIGTERM before SIGKILL.
KILL_GRACE_S = 5.0
TIMEOUT_EXIT = 124


@dataclass(frozen=True)
class Files:
    stdout: Path
    stderr: Path


Role = Literal["build", "probe", "warmup", "measure", "profile"]


def run(role: Role, call: Invocation, cwd: Path, files: Files, base: Path) -> Run:
    """Run `call` in `cwd`; logs go to `files`, named relative to `base` in the Run."""
    before, started, t0 = load1(), now(), time.perf_counter()
    timed_out = False
    with files.stdout.open("wb") as out, files.stderr.open("wb") as err:
        try:
            proc = subprocess.Popen(call.argv, cwd=cwd, env={**os.environ, **call.env},
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True)
        except OSError as error:
            err.write(f"cannot start {call.argv[0]}: {error.strerror}\n".encode())
            code = 127
        else:
            try:
                code = proc.wait(timeout=call.timeout_s)
            except subprocess.TimeoutExpired:
                timed_out, code = True, TIMEOUT_EXIT
                _kill_group(proc)
            _reap_stragglers(proc.pid)
    wall = time.perf_counter() - t0
    return Run(role=role, argv=call.argv, env=call.env, cwd=str(cwd),
               exit_code=_shell_code(code), timed_out=timed_out, wall_s=round(wall, 6),
               started=started, ended=now(), load1_before=before, load1_after=load1(),
               stdout=str(files.stdout.relative_to(base)),
               stderr=str(files.stderr.relative_to(base)))


def output(run: Run, base: Path, timeout_s: float) -> RunOutput:
    """A finished run as its parser reads it."""
    return RunOutput(stdout=(base / run.stdout).read_text(errors="replace"),
                     stderr=(base / run.stderr).read_text(errors="replace"),
                     exit_code=run.exit_code, timed_out=run.timed_out, timeout_s=timeout_s)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    _signal_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc.pid, signal.SIGKILL)
        proc.wait()


def _reap_stragglers(pgid: int) -> None:
    """Kill what the command left behind, and wait until it is gone (bounded), so nothing of
    it runs on into the next measurement."""
    _signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)  # waiting on the kernel to finish the kill, not standing in for work


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _shell_code(code: int) -> int:
    """Killed by signal N reads as 128 + N, as a shell reports it (SIGKILL = 137)."""
    return 128 - code if code < 0 else code
