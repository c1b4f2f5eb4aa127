"""Show a sweep's cells: the whole table for a small sweep (or with --all), an overview for a
large one (counts per state, backend and model; failed and running cells in full), JSON for
scripts, and with --watch a progress bar fed by the sweep's events until it ends."""

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from jobs.record.attempts import FINAL, CellState
from jobs.spec.cells import Cell
from workers.shared.state import Store

_STYLE = {"done": "green", "failed": "red", "timed_out": "red", "cancelled": "magenta",
          "skipped": "dim", "running": "yellow", "queued": "dim"}
ORDER = ("done", "failed", "timed_out", "cancelled", "skipped", "running", "queued")
# Up to this many cells the table lists every one; above it, the overview.
FULL_TABLE_CELLS = 60


def table(cells: Sequence[Cell], states: Mapping[str, CellState], title: str) -> Table:
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


def overview(cells: Sequence[Cell], states: Mapping[str, CellState], title: str) -> list[Table]:
    """Counts per backend and model, then every cell that failed or is running."""
    counts: Counter[tuple[str, str, str]] = Counter(
        (c.backend, c.model, states[c.id].status if c.id in states else "queued") for c in cells)
    t = Table(title=f"{title} (every cell: --all)")
    for column in ("backend", "model", *ORDER):
        t.add_column(column, justify="right" if column in ORDER else "left")
    for backend, model in sorted({(b, m) for b, m, _ in counts}):
        t.add_row(backend, model, *(str(counts[(backend, model, s)] or "") for s in ORDER))
    notable = [c for c in cells if c.id in states
               and states[c.id].status in ("failed", "timed_out", "running")]
    tables = [t]
    if notable:
        tables.append(table(notable, states, "failed, timed out and running cells"))
    return tables


def summary(states: Mapping[str, CellState]) -> str:
    return counts_text(Counter(s.status for s in states.values()))


def counts_text(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in ORDER if counts.get(k))


def show(console: Console, cells: Sequence[Cell], states: Mapping[str, CellState], title: str,
         everything: bool) -> None:
    views: Iterable[Table] = ([table(cells, states, title)]
                              if everything or len(cells) <= FULL_TABLE_CELLS
                              else overview(cells, states, title))
    for view in views:
        console.print(view)


def watch(store: Store, sweep_id: str, cells: Sequence[Cell], console: Console) -> None:
    """Follow the sweep's events until every cell has ended: each event moves one cell's
    count (no re-reading of every state); a quiet spell reads the states again, once."""
    status = {c: s.status for c, s in store.states(sweep_id).items()}
    counts = Counter(status.values())
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task(sweep_id, total=len(cells))
        events = store.events(sweep_id, timeout_s=5.0)
        while True:
            final = sum(n for s, n in counts.items() if s in FINAL)
            progress.update(task, completed=final,
                            description=f"{sweep_id}: {counts_text(counts)}")
            if final == len(cells):
                break
            event = next(events)
            if event is None or event.get("cell") not in status:
                status = {c: s.status for c, s in store.states(sweep_id).items()}
                counts = Counter(status.values())
                continue
            counts[status[event["cell"]]] -= 1
            status[event["cell"]] = event["status"]
            counts[event["status"]] += 1
        events.close()
