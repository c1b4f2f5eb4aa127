"""What a worker reports for one attempt at one cell (its `result.json`); a cell's state is in
states.py."""

from dataclasses import field
from typing import Literal

from jobs.parsers.readings import BenchReading, Failure, ProfileReading
from jobs.record.gpu_state import GpuReading
from jobs.record.states import FINAL as FINAL  # re-exported: where most callers look
from jobs.record.states import CellState as CellState
from jobs.record.states import CellStatus as CellStatus
from jobs.record.states import Phase as Phase
from jobs.spec.envelope import PROTOCOL
from jobs.strict import Strict, slotted


class HostFacts(Strict):
    hostname: str
    os: str
    kernel: str
    arch: str
    cpu: str
    chip: str
    cores: int
    memory_gb: float
    gpu: str | None = None
    python: str
    # Stable facts a testbed's fingerprint is made of (jobs/trends/fingerprint.py); None where
    # the host has no such thing or an older worker did not probe it.
    driver: str | None = None
    cuda: str | None = None
    os_build: str | None = None
    power_mode: str | None = None
    # BENCHFLEET_TESTBED: the user's name for this testbed, overriding the fingerprint.
    testbed: str | None = None


@slotted
class Gate:
    """The idle gate's reading before a group's first run, or before a run after a gap.

    The gate waits while load1 (read twice) is at or above `threshold`, or a GPU is busy, for
    at most its maximum wait; then the run goes ahead and `idle` is False: "host not idle".
    """

    at: str
    idle: bool
    waited_s: float
    threshold: float
    load1: list[float]
    max_wait_s: float
    gpu: dict[str, str] = field(default_factory=dict)
    thermal: str | None = None
    reason: str | None = None


class Run(Strict):
    """One command the worker ran, exactly as it ran it."""

    role: Literal["build", "probe", "warmup", "measure", "profile"]
    argv: list[str]
    env: dict[str, str]
    cwd: str
    exit_code: int
    timed_out: bool
    wall_s: float
    started: str
    ended: str
    load1_before: float
    load1_after: float
    stdout: str
    stderr: str
    # Whether the run held the host lease (one measured command or build per host at a time).
    host_lease: bool = False
    # Another sweep measured on this host during this run's group, before it (the host lease's
    # last holder, read when the lease was taken): the group's arms were not back to back.
    other_sweep: str | None = None
    # Tries of one command that a recipe's retry policy allowed; earlier tries are superseded.
    try_number: int = 1
    superseded: bool = False
    # The files under {out} its parser read with its output (paths relative to {out}), so
    # `check --artifacts` can parse the raw output again.
    files: list[str] = []
    # NVIDIA hosts: every GPU's state just before and just after a measured run.
    gpu_before: GpuReading | None = None
    gpu_after: GpuReading | None = None


class BuildInfo(Strict):
    recipe: str
    ok: bool
    cached: bool
    wall_s: float | None
    built_at: str | None
    reason: str | None = None




class AttemptResult(Strict):
    protocol: int = PROTOCOL
    sweep_id: str
    cell_id: str
    attempt: int
    worker: str
    host: HostFacts
    requested_commit: str
    commit: str | None
    started: str
    ended: str
    build: BuildInfo | None = None
    runs: list[Run] = []
    target: dict[str, str] = {}
    reading: BenchReading | None = None
    profile: ProfileReading | None = None
    failure: Failure | None = None
    # The idle gate that covered this attempt's runs (the group's first run, or after a gap).
    gate: Gate | None = None
    # The recipe's parser, and the token counts the cell asked for (jobs/record/validity.py).
    parser: str | None = None
    asked: dict[str, int] = {}
    # The GPU state before and after the group's first measured run: the range it started in.
    gpu_start: list[GpuReading] = []
    # The clocks the worker locked for the group (`nvidia-smi -lgc`), or why it could not.
    gpu_clocks: str | None = None

    @property
    def measured(self) -> Run | None:
        return next((r for r in self.runs if r.role == "measure" and not r.superseded), None)
