"""What a worker reports for one attempt at one cell (its `result.json`), and a cell's state."""

from typing import Literal

from jobs.model import Strict
from jobs.readings import BenchReading, Failure, ProfileReading

CellStatus = Literal["queued", "running", "done", "failed"]
FINAL: frozenset[str] = frozenset({"done", "failed"})


class CellState(Strict):
    """A cell's place in its life, as kept in Redis."""

    status: CellStatus
    worker: str | None = None
    attempt: int = 0
    reason: str | None = None
    updated: str | None = None


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


class BuildInfo(Strict):
    recipe: str
    ok: bool
    cached: bool
    wall_s: float | None
    built_at: str | None
    reason: str | None = None


class AttemptResult(Strict):
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

    @property
    def measured(self) -> Run | None:
        return next((r for r in self.runs if r.role == "measure"), None)
