"""GPU state around every measured run, and the group's clocks locked where the host allows.

Read just before and just after the command, never during it: nothing wakes the worker while
a measured command runs. The group's first measured run gives the range it started in, which
jobs/record/gpu_state.py judges later runs against. With BENCHFLEET_GPU_LOCK_CLOCKS the worker locks
the GPU clocks (`nvidia-smi -lgc MIN,MAX`, root only) before the group's first measured run
and resets them (`-rgc`) when the group ends; the attempt records which happened.
"""

import logging
import os
import shutil
import subprocess

from jobs.record.attempts import Run
from workers.execute import Command
from workers.gpu_reader import read_gpus
from workers.hooks import Hook, Proceed
from workers.in_flight import Group, Job

log = logging.getLogger(__name__)
_SMI_TIMEOUT_S = 30


class GpuWatch(Hook):
    def __init__(self, lock_clocks: str | None = None) -> None:
        self.lock_clocks = lock_clocks

    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        if command.role != "measure":
            return proceed()
        group = job.group
        if self.lock_clocks and group.gpu_clocks is None:
            group.gpu_clocks = _lock(self.lock_clocks)
        before = read_gpus()
        run = proceed()
        after = read_gpus()
        if not group.gpu_start and before is not None and after is not None:
            group.gpu_start = [before, after]
        return run.model_copy(update={"gpu_before": before, "gpu_after": after})

    def after_group(self, group: Group) -> None:
        if group.gpu_clocks and group.gpu_clocks.startswith("locked"):
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
