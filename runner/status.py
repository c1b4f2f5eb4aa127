"""Show a sweep's cells: a table, and with --watch a progress bar until the sweep ends."""

from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from jobs.attempts import FINAL, CellState
from jobs.cells import Cell
from workers.fleet.state import Store

_STYLE = {"done": "green", "failed": "red", "timed_out": "red", "cancelled": "magenta",
          "skipped": "dim", "running": "yellow", "queued": "dim"}
ORDER = ("done", "failed", "timed_out", "cancelled", "skipped", "running", "queued")


def table(cells: list[Cell], states: dict[str, CellState], title: str) -> Table:
    t = Table(title=title)
    t.add_column("cell (commit-backend-model-arm-repeat-hash)", overflow="fold", no_wrap=True)
    for column in ("state", "worker", "try", "gen"):
        t.add_column(column, no_wrap=True)
    t.add_column("reason", overflow="fold")
    for cell in cells:
        s = states.get(cell.id, CellState(status="queued"))
        t.add_row(cell.id, f"[{_STYLE[s.status]}]{s.status}[/]", s.worker or "",
                  str(s.attempt or ""), str(s.generation or ""), s.reason or "", )
    return t


def summary(states: dict[str, CellState]) -> str:
    counts = Counter(s.status for s in states.values())
    return ", ".join(f"{counts[k]} {k}" for k in ORDER if counts[k])


def watch(store: Store, sweep_id: str, cells: list[Cell], console: Console) -> None:
    """Follow the sweep's events (no polling loop) until every cell has ended."""
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task(sweep_id, total=len(cells))
        events = store.events(sweep_id, timeout_s=5.0)
        while True:
            states = store.states(sweep_id)
            final = sum(1 for s in states.values() if s.status in FINAL)
            progress.update(task, completed=final, description=f"{sweep_id}: {summary(states)}")
            if final == len(cells):
                break
            next(events)
        events.close()
