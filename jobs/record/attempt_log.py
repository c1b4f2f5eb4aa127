"""Every attempt a cell had, and whether its group kept same-host pairing and its round-robin
order, so a rerun or a lost worker is visible in the record instead of smoothed over."""

from collections.abc import Sequence
from dataclasses import dataclass

from jobs.record.parts import Measurement
from jobs.spec.cells import Cell
from jobs.strict import Lean


class AttemptEntry(Lean):
    cell_id: str
    attempt: int
    worker: str
    hostname: str
    started: str
    ended: str
    outcome: str
    used: bool


@dataclass(frozen=True, slots=True)  # one per attempt read: no dict of its own
class Tried:
    """An attempt as far as the history needs it (jobs/record/digest.py keeps one an attempt)."""

    cell_id: str
    attempt: int
    worker: str
    hostname: str
    started: str
    ended: str
    failure: str | None  # "kind: reason"


def attempt_history(cells: Sequence[Cell], tried: Sequence[tuple[str, Tried, bool]]
                    ) -> list[AttemptEntry]:
    """The attempts of every cell that had more than one, oldest first; an attempt number
    with no artifacts (its worker died before storing them) is listed as such. `tried`: each
    attempt read, under the cell it counts for, and whether it is the one its cell's state
    names."""
    by_cell: dict[str, list[tuple[Tried, bool]]] = {}
    for cell_id, t, used in tried:
        by_cell.setdefault(cell_id, []).append((t, used))
    entries = []
    for cell in cells:
        found = sorted(by_cell.get(cell.id, []), key=lambda pair: pair[0].attempt)
        last = max((r.attempt for r, _ in found), default=0)
        if last <= 1:
            continue
        stored = {r.attempt for r, _ in found}
        entries += [AttemptEntry(cell_id=cell.id, attempt=n, worker="?", hostname="?",
                                 started="", ended="", used=False,
                                 outcome="no artifacts: its worker was lost before storing "
                                 "them") for n in range(1, last) if n not in stored]
        entries += [_entry(r, u) for r, u in found]
    return sorted(entries, key=lambda e: (e.cell_id, e.attempt))


def order_notes(cells: Sequence[Cell], ms: Sequence[Measurement]) -> list[str]:
    """Where a group's measurements left same-host pairing or their round-robin order."""
    notes = []
    hosts = sorted({m.hostname for m in ms})
    if len(hosts) > 1:
        notes.append(f"arms measured on {len(hosts)} hosts ({', '.join(hosts)}): same-host "
                     "pairing broken (a rerun or a lost worker)")
    planned = [m.cell_id for m in sorted(ms, key=lambda m: m.order)]
    ran = [m.cell_id for m in sorted(ms, key=lambda m: (m.started, m.order))]
    moved = [c for c, p in zip(ran, planned, strict=True) if c != p]
    if moved:
        notes.append(f"{len(moved)} measurements ran out of their round-robin place (a rerun, "
                     "a retry or a lost worker): adjacent arms are not what the plan paired")
    return notes


def _entry(t: Tried, used: bool) -> AttemptEntry:
    if t.failure:
        outcome = t.failure
    elif used:
        outcome = "measured; this attempt counts"
    else:
        outcome = "measured, not accepted (another attempt counts)"
    return AttemptEntry(cell_id=t.cell_id, attempt=t.attempt, worker=t.worker,
                        hostname=t.hostname, started=t.started, ended=t.ended,
                        outcome=outcome, used=used)
