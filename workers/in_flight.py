"""What a worker knows while it runs one message (a group of cells) and one cell of it."""

from dataclasses import dataclass, field
from pathlib import Path

from jobs.record.attempts import BuildInfo, Gate, Run
from jobs.spec.cells import Cell
from jobs.spec.envelope import Envelope
from workers.shared.clock import now
from workers.shared.messages import Signed


@dataclass
class Group:
    """One task message: a group's cells, run contiguously on this host."""

    sweep_id: str
    task_id: str
    items: list[Signed]
    # monotonic time the last command of this message ended (the idle gate's gap)
    last_command_end: float | None = None
    gate: Gate | None = None


@dataclass
class Job:
    """One cell of a group; hooks fill in what they establish (the envelope, the attempt)."""

    group: Group
    signed: Signed
    envelope: Envelope | None = None
    attempt: int | None = None
    staging: Path | None = None
    started: str = field(default_factory=now)
    commit: str | None = None
    build: BuildInfo | None = None
    runs: list[Run] = field(default_factory=list)
    target: dict[str, str] = field(default_factory=dict)
    # the first measured command of this cell still has to pass the idle gate
    gated: bool = False

    @property
    def cell(self) -> Cell:
        assert self.envelope is not None, "the signature hook runs before anything reads it"
        return self.envelope.cell

    @property
    def sweep_id(self) -> str:
        return self.group.sweep_id
