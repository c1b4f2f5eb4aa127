"""GPU state around every measured run, and the group's clocks locked where the host allows.

Read just before and just after the command, never during it: nothing wakes the worker while
a measured command runs. The group's first measured run gives the range it started in, which
jobs/record/gpu_state.py judges later runs against. With BENCHFLEET_GPU_LOCK_CLOCKS the worker
locks the GPU clocks (`nvidia-smi -lgc MIN,MAX`, root only) before the group's first measured
run and resets them (`-rgc`) when the group ends; the attempt records which happened.

NVML's utilisation is an average over its last sample period (1/6 s to 1 s, by product), so a
reading taken the moment the previous command ends still shows that command's tail. On a GPU
host the "before" reading therefore waits until `settle_s` has passed since the previous
command of the group ended; the wait is before the command, never inside it.
"""

import logging
import os
import shutil
import subprocess
import time

from jobs.record.attempts import AttemptResult
from jobs.record.gpu_state import GpuReading
from workers.execute import Command
from workers.gpu_reader import read_gpus
from workers.hooks import Hook, Proceed, Runs
from workers.in_flight import Attempt, Group

log = logging.getLogger(__name__)
_SMI_TIMEOUT_S = 30


class GpuWatch(Hook):
    def __init__(self, lock_clocks: str | None = None, settle_s: float = 1.0) -> None:
        self.lock_clocks = lock_clocks
        self.settle_s = settle_s
        self.has_gpu: bool | None = None      # a host property: read once per worker
        self.ended: float | None = None       # monotonic end of the group's previous command
        # Per message: the readings around its first measured run, and its clock lock.
        self.start: list[GpuReading] = []
        self.clocks: str | None = None

    def before_group(self, group: Group) -> Group:
        self.start, self.clocks, self.ended = [], None, None
        return group

    def around_command(self, attempt: Attempt, command: Command, proceed: Proceed) -> Runs:
        if command.role != "measure":
            return self._timed(proceed)
        if self.lock_clocks and self.clocks is None:
            self.clocks = _lock(self.lock_clocks)
        self._settle()
        if not self.has_gpu:  # nothing to read, and NVML's failed load costs a command
            return self._timed(proceed)
        before = read_gpus()
        *earlier, run = self._timed(proceed)
        after = read_gpus()
        if not self.start and before is not None and after is not None:
            self.start = [before, after]
        return (*earlier, run.model_copy(update={"gpu_before": before, "gpu_after": after}))

    def _timed(self, proceed: Proceed) -> Runs:
        try:
            return proceed()
        finally:
            self.ended = time.monotonic()

    def _settle(self) -> None:
        """Let NVML's sample period pass since the previous command, on a GPU host only."""
        if self.has_gpu is None:
            self.has_gpu = read_gpus() is not None
        if not self.has_gpu or self.ended is None:
            return
        left = self.settle_s - (time.monotonic() - self.ended)
        if left > 0:
            time.sleep(left)  # waiting for the sensor's window to close, not for work

    def before_store(self, attempt: Attempt, result: AttemptResult) -> AttemptResult:
        return result.model_copy(update={"gpu_start": list(self.start),
                                         "gpu_clocks": self.clocks})

    def after_group(self, group: Group) -> None:
        if self.clocks and self.clocks.startswith("locked"):
            done = _smi(["-rgc"])
            if done:
                log.warning("could not reset the GPU clocks: %s", done)


def _lock(clocks: str) -> str:
    """Lock the clocks for the group; the sentence the attempt records."""
    if shutil.which("nvidia-smi") is None:
        return f"not locked at {clocks} MHz: no nvidia-smi on this host"
    if os.geteuid() != 0:
        return f"not locked at {clocks} MHz: `nvidia-smi -lgc` needs root"
    failed = _smi(["-lgc", clocks])
    return f"not locked at {clocks} MHz: {failed}" if failed else f"locked at {clocks} MHz"


def _smi(args: list[str]) -> str:
    """'' when nvidia-smi did it, else what it said."""
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True,
                              timeout=_SMI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    return "" if done.returncode == 0 else (done.stdout + done.stderr).strip()[:200]
