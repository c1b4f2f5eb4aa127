"""A cell's state as Redis keeps it. Apart from the attempt's models (attempts.py), which bring
every parser's: `status` and `submit` need only this, and start faster without the rest."""

from typing import Literal

from jobs.strict import slotted

CellStatus = Literal["queued", "running", "done", "failed", "timed_out", "cancelled",
                     "skipped"]
# A final cell leaves its state only through `rerun`, which starts a new generation.
FINAL: frozenset[str] = frozenset({"done", "failed", "timed_out", "cancelled", "skipped"})
# What the worker of a running cell does now, as it notes it (workers/shared/notes.py).
Phase = Literal["building", "gating", "measuring"]


@slotted  # a record holds one per cell while it reads the attempts, status one per cell
class CellState:
    """A cell's place in its life, as kept in Redis (scalars only: Redis scripts edit it)."""

    status: CellStatus
    worker: str | None = None
    instance: str | None = None
    attempt: int = 0
    generation: int = 0
    reason: str | None = None
    updated: str | None = None
    # The last phase its worker noted: current while it runs, where it ended once final.
    phase: Phase | None = None
