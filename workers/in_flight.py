"""What a worker knows while it runs one message (a group of cells) and one attempt at a cell.

Each is an immutable value: a step that learns something makes a copy (dataclasses.replace),
as dramatiq's Message.copy does, so a hook never finds a field filled in behind its back.
"""

from dataclasses import dataclass, field

from jobs.spec.cells import Cell
from jobs.spec.envelope import Envelope
from workers.plan import Plan
from workers.shared.clock import now
from workers.shared.messages import Signed


@dataclass(frozen=True)
class SignedCell:
    """A cell as the coordinator signed it: the bytes, and the envelope they verified to."""

    signed: Signed
    envelope: Envelope

    @property
    def cell(self) -> Cell:
        return self.envelope.cell


@dataclass(frozen=True)
class Group:
    """One task message: a group's cells, run contiguously on this host."""

    sweep_id: str
    task_id: str
    items: tuple[Signed, ...]  # as the message carried them, verified or not
    # The cells this worker may run, in order: only the signature hook fills it, so a chain
    # without it runs nothing.
    cells: tuple[SignedCell, ...] = ()


@dataclass(frozen=True)
class Arrival:
    """A verified cell of a message, before the lease takes it."""

    group: Group
    item: SignedCell

    @property
    def cell(self) -> Cell:
        return self.item.cell

    @property
    def sweep_id(self) -> str:
        return self.group.sweep_id

    def taken(self, number: int, marked: bool | None = None) -> "Attempt":
        return Attempt(self.group, self.item, number, marked=marked)


@dataclass(frozen=True)
class Attempt:
    """Attempt `number` at a cell, taken by this worker, from its take to its result."""

    group: Group
    item: SignedCell
    number: int
    started: str = field(default_factory=now)
    # Its cancel mark, read in the take's own step (workers/hooks/cancel.py); None: not read.
    marked: bool | None = None
    # Every command the cell will run, resolved once after its checkout (workers/plan.py).
    plan: Plan | None = None

    @property
    def cell(self) -> Cell:
        return self.item.cell

    @property
    def envelope(self) -> Envelope:
        return self.item.envelope

    @property
    def sweep_id(self) -> str:
        return self.group.sweep_id
