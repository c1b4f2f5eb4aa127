"""The idle gate: before a group's first measured command, and again after a gap, wait until
the host is idle — load1 below a threshold read twice, no busy GPU — for at most a set time.
Past it the run goes ahead and the attempt carries `idle: false`: the record says "host not
idle". Not before every run of a group: a group's runs follow each other closely, and the
gate's wait would otherwise dominate dispatch.
"""

import time
from dataclasses import dataclass

from jobs.record.attempts import Gate, Run
from workers.execute import Command
from workers.hooks import Hook, Proceed
from workers.host_facts import busy_gpu, gpu_state, load1, thermal_state
from workers.in_flight import Job
from workers.shared.clock import now

GATED = ("warmup", "measure", "profile")


@dataclass(frozen=True)
class GateConfig:
    threshold: float
    max_wait_s: float
    gap_s: float
    # Between the two readings (the kernel updates load1 every 5 s) and between tries.
    interval_s: float = 5.0


class IdleGate(Hook):
    def __init__(self, config: GateConfig) -> None:
        self.config = config

    def around_command(self, job: Job, command: Command, proceed: Proceed) -> Run:
        group = job.group
        gap = (group.last_command_end is None
               or time.monotonic() - group.last_command_end > self.config.gap_s)
        if command.role in GATED and (group.gate is None or gap):
            group.gate = wait_for_idle(self.config)
        try:
            return proceed()
        finally:
            group.last_command_end = time.monotonic()


def wait_for_idle(config: GateConfig) -> Gate:
    """Block until the host is idle or the wait runs out; every reading is kept."""
    started, started_at = time.monotonic(), now()
    readings: list[float] = []
    while True:
        first, gpu = load1(), gpu_state()
        readings.append(first)
        if first < config.threshold and not busy_gpu(gpu):
            time.sleep(config.interval_s)  # the second reading, one load1 update later
            second, gpu = load1(), gpu_state()
            readings.append(second)
            if second < config.threshold and not busy_gpu(gpu):
                return _gate(started_at, True, started, config, readings, gpu, None)
        waited = time.monotonic() - started
        if waited >= config.max_wait_s:
            why = (f"load1 {readings[-1]:.2f} (threshold {config.threshold:g})"
                   + (f", GPU busy: {busy_gpu(gpu)}" if busy_gpu(gpu) else "")
                   + f" after waiting {waited:.0f} s")
            return _gate(started_at, False, started, config, readings, gpu, why)
        time.sleep(min(config.interval_s, config.max_wait_s - waited))


def _gate(at: str, idle: bool, started: float, config: GateConfig, readings: list[float],
          gpu: dict[str, str], reason: str | None) -> Gate:
    return Gate(at=at, idle=idle, waited_s=round(time.monotonic() - started, 3),
                threshold=config.threshold, load1=readings, max_wait_s=config.max_wait_s,
                gpu=gpu, thermal=thermal_state(), reason=reason)
