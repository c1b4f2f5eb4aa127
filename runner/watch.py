"""`status --watch`: a sweep's progress, hyperfine's way — a bar of cells ended of all, the
counts, an ETA from the cells measured so far (jobs/statistics/progress.py), and under it
each worker with what it does now (building, gating, measuring) and why it waits, if it does.

Fed by the sweep's events: a state change reads the log's new entries (one short read, no
re-reading of every state); a note carries its phase and reason itself; a quiet spell reads
the states again, once."""

import json
from collections import Counter
from collections.abc import Sized
from datetime import datetime

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from jobs.record.states import FINAL, CellState
from jobs.statistics.progress import CellTimes, eta_text
from jobs.strict import replaced
from runner.status import counts_text
from workers.shared import redis_keys
from workers.shared.clock import epoch
from workers.shared.state import Store

# With no event for this long, the states are read again (an event may have been missed).
QUIET_S = 5.0


class Following:
    """What the watch knows of a sweep: each cell's state, and how long its cells took."""

    def __init__(self, store: Store, sweep_id: str, cells: Sized) -> None:
        self.store, self.sweep_id, self.total = store, sweep_id, len(cells)
        self.times = CellTimes()
        self.read = 0  # log entries read so far
        self._read_log(show=False)  # before the states: a change between is read again
        self.states = store.states(sweep_id)
        self.live = self._live()

    def hear(self, event: dict[str, str] | None) -> None:
        if event is None:
            self.states, self.live = self.store.states(self.sweep_id), self._live()
            self._read_log()
        elif "phase" in event:  # a note on a running cell (workers/shared/notes.py)
            state = self.states.get(event["cell"])
            if state is not None and state.status == "running":
                self.states[event["cell"]] = replaced(
                    state, phase=event["phase"] or None, reason=event["reason"] or None)
        else:
            self._read_log()

    @property
    def ended(self) -> int:
        return sum(1 for s in self.states.values() if s.status in FINAL)

    def eta(self) -> str:
        workers = len(self.times.workers & self.live) or len(self.running())
        return eta_text(self.times.times, self.total - self.ended, workers)

    def running(self) -> list[tuple[str, CellState]]:
        return sorted(((c, s) for c, s in self.states.items() if s.status == "running"),
                      key=lambda pair: pair[1].worker or "")

    def _read_log(self, show: bool = True) -> None:
        raw = self.store.r.lrange(redis_keys.sweep(self.sweep_id, "log"), self.read, -1)
        self.read += len(raw)
        entries = [json.loads(e) for e in raw]
        self.times.add({**e, "at": datetime.fromisoformat(e["at"]).timestamp()}
                       for e in entries)
        if show:  # each entry is a change of a cell's state
            for e in entries:
                self.states[e["cell"]] = CellState(
                    status=e["status"], worker=e.get("worker") or None,
                    attempt=int(e.get("attempt", 0)), generation=int(e.get("generation", 0)),
                    reason=e.get("reason") or None)
            if any(e["status"] in FINAL for e in entries):
                self.live = self._live()  # the ETA divides by the workers still there

    def _live(self) -> set[str]:
        return {str(n) for n in self.store.r.zrangebyscore(redis_keys.WORKERS, epoch(), "+inf")}


def workers_table(following: Following) -> Table:
    """Each worker running a cell of the sweep: its phase, the cell, why it waits."""
    t = Table(box=None, show_header=False, padding=(0, 1, 0, 2))
    t.add_column("worker", no_wrap=True)
    t.add_column("phase", no_wrap=True)
    t.add_column("cell", overflow="fold")
    for cell, s in following.running():
        t.add_row(s.worker or "?", s.phase or "starting",
                  cell + (f": {s.reason}" if s.reason else ""))
    return t


def watch(store: Store, sweep_id: str, cells: Sized, console: Console) -> None:
    """Follow the sweep until every cell has ended."""
    following = Following(store, sweep_id, cells)
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("cells"), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                        console=console)
    task = progress.add_task(sweep_id, total=len(cells), eta="")
    events = store.events(sweep_id, timeout_s=QUIET_S)
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        while True:
            progress.update(task, completed=following.ended, eta=following.eta())
            counts: Counter[str] = Counter(s.status for s in following.states.values())
            live.update(Group(progress, f"  {counts_text(counts)}", workers_table(following)))
            if following.ended == len(cells):
                break
            following.hear(next(events))
    events.close()
