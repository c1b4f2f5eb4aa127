"""Show a sweep's cells: the whole table for a small sweep (or with --all), an overview for a
large one (counts per state, backend and model; failed and running cells in full), JSON for
scripts; `--watch` follows it (runner/watch.py)."""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from rich.console import Console
from rich.table import Table

from jobs.record.states import CellState

if TYPE_CHECKING:  # the cells' model: not imported by `status`, which reads no cell
    from jobs.spec.cells import Cell

_STYLE = {"done": "green", "failed": "red", "timed_out": "red", "cancelled": "magenta",
          "skipped": "dim", "running": "yellow", "queued": "dim"}
ORDER = ("done", "failed", "timed_out", "cancelled", "skipped", "running", "queued")
# Up to this many cells the table lists every one; above it, the overview.
FULL_TABLE_CELLS = 60
# The cells shown in full in the overview: those that need a look.
NOTABLE = ("failed", "timed_out", "running")


class Row(Protocol):
    """A cell as the views use it (a Cell, or the sweep's compact CellRow)."""

    @property
    def id(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def model(self) -> str: ...


def table(cells: Sequence[Row], states: Mapping[str, CellState], title: str) -> Table:
    # On a narrow terminal the long cell id folds; the short columns keep their words whole.
    t = Table(title=title, caption="cell: commit-backend-model-arm-repeat-hash")
    t.add_column("cell", overflow="fold", ratio=3)
    t.add_column("state", no_wrap=True, min_width=len("timed_out"))
    t.add_column("worker", overflow="fold", ratio=1)
    for column in ("try", "gen"):
        t.add_column(column, no_wrap=True, min_width=3)
    t.add_column("reason", overflow="fold", ratio=2)
    for cell in cells:
        s = states.get(cell.id, CellState(status="queued"))
        t.add_row(cell.id, f"[{_STYLE[s.status]}]{s.status}[/]{_phase(s)}", s.worker or "",
                  str(s.attempt or ""), str(s.generation or ""), s.reason or "")
    return t


def _phase(state: CellState) -> str:
    """A running cell's phase beside its state; a final one keeps its last, unshown."""
    return f" ({state.phase})" if state.status == "running" and state.phase else ""


def overview(cells: Sequence[Row], states: Mapping[str, CellState], title: str,
             statuses: Mapping[str, str]) -> list[Table]:
    """Counts per backend and model, then every cell that failed or is running (`states`
    need hold only those)."""
    counts: Counter[tuple[str, str, str]] = Counter(
        (c.backend, c.model, statuses.get(c.id, "queued")) for c in cells)
    t = Table(title=f"{title} (every cell: --all)")
    for column in ("backend", "model", *ORDER):
        t.add_column(column, justify="right" if column in ORDER else "left")
    for backend, model in sorted({(b, m) for b, m, _ in counts}):
        t.add_row(backend, model, *(str(counts[(backend, model, s)] or "") for s in ORDER))
    notable = [c for c in cells if statuses.get(c.id) in NOTABLE]
    tables = [t]
    if notable:
        tables.append(table(notable, states, "failed, timed out and running cells"))
    return tables


def summary(states: Mapping[str, CellState]) -> str:
    return counts_text(Counter(s.status for s in states.values()))


def cut_short(sweep_id: str, groups: set[str], cells: Sequence["Cell"],
              statuses: Mapping[str, str]) -> list[str]:
    """The line for a sweep whose submit was cut short (`groups`: those it has not queued)."""
    if not groups:
        return []
    n = sum(c.group in groups and statuses[c.id] == "queued" for c in cells)
    return [f"saved, {n:,} of {len(cells):,} cells not yet published (its submit was cut "
            f"short): run `benchfleet submit --resume {sweep_id}`"]


def counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in ORDER if counts.get(k))


def in_full(cells: Sequence[Row], statuses: Mapping[str, str], everything: bool) -> list[str]:
    """The cells `show` lists in full: every one in a small sweep (or with --all), else the
    notable."""
    if everything or len(cells) <= FULL_TABLE_CELLS:
        return [c.id for c in cells]
    return [c.id for c in cells if statuses.get(c.id) in NOTABLE]


def show(console: Console, cells: Sequence[Row], states: Mapping[str, CellState], title: str,
         everything: bool, statuses: Mapping[str, str] | None = None) -> None:
    """The table or the overview; `states` need hold only the cells `in_full` names when
    `statuses` gives every cell's."""
    if statuses is None:
        statuses = {k: s.status for k, s in states.items()}
    views: Iterable[Table] = ([table(cells, states, title)]
                              if everything or len(cells) <= FULL_TABLE_CELLS
                              else overview(cells, states, title, statuses))
    for view in views:
        console.print(view)
