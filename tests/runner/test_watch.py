"""`status --watch` (runner/watch.py) on a real Redis: the bar's cells ended of all, the ETA
once a cell is done, and each worker's phase and why it waits, as the cells' states change."""

import io
import re
import threading
from datetime import datetime

from rich.console import Console

from runner.watch import watch
from tests.support.cells import Submitted
from tests.support.waits import eventually
from workers.shared.leases import Lease
from workers.shared.notes import Notes

WAITING = "waiting for an idle host: load1 2.40 > 0.6 for 40 s (max 10 min)"


def test_the_watch_shows_progress_eta_and_each_workers_phase(submitted: Submitted) -> None:
    store, sweep_id, cells = submitted.store, submitted.sweep_id, submitted.cells
    Lease(store.r, "w1", "i1").take({"backend": "cpu"}, takeover=False)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200, color_system=None)
    watcher = threading.Thread(target=watch, args=(store, sweep_id, cells, console))
    watcher.start()

    def shows(pattern: str) -> bool:
        return re.search(pattern, out.getvalue()) is not None

    first, *rest = [c.id for c in cells]
    assert store.take(sweep_id, first, 0, "w1", "i1", 60).attempt == 1
    notes = Notes(store.r, "w1", "i1")
    notes.note(sweep_id, first, 1, "gating", WAITING)
    eventually(lambda: shows(r"0/4 cells .* ETA unknown \(no cell done yet\)")
               and shows(rf"w1\s+gating\s+{first}: {re.escape(WAITING)}"), 10.0,
               "the gate's reason in the watch")
    notes.note(sweep_id, first, 1, "measuring")
    eventually(lambda: shows(rf"w1\s+measuring\s+{first}\s*$"), 10.0, "measuring")
    store.finish(sweep_id, first, "w1", "i1", 1, "done", None, 60)
    eta = r"1/4 cells .* ETA 0:(\d\d):(\d\d) \(a cell takes (\d+\.\d) s, 1 worker\)"
    eventually(lambda: shows(eta) and shows(r"1 done, 3 queued"), 10.0, "one cell done, an ETA")
    minutes, seconds, cell_s = re.findall(eta, out.getvalue())[-1]
    taken = str(store.log(sweep_id)[-1]["at"]), str(store.log(sweep_id)[0]["at"])
    assert float(cell_s) == round((datetime.fromisoformat(taken[0])
                                   - datetime.fromisoformat(taken[1])).total_seconds(), 1)
    # 3 cells left, 1 worker; both figures are shown rounded
    assert abs(int(minutes) * 60 + int(seconds) - float(cell_s) * 3) <= 0.7
    for cell in rest:
        assert store.take(sweep_id, cell, 0, "w1", "i1", 60).attempt == 1
        store.finish(sweep_id, cell, "w1", "i1", 1, "done", None, 60)
    watcher.join(timeout=30)
    assert not watcher.is_alive()
    assert shows(r"4/4 cells .* finished") and shows(r"4 done")
