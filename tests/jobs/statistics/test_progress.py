"""Progress as `status --watch` shows it: cells ended of all, and an ETA from the median time
a cell took from its take to `done`, times the cells left, over the workers."""

from jobs.statistics.progress import CellTimes, eta_s, eta_text


def _entry(cell: str, attempt: int, status: str, at: float, worker: str = "w1"
           ) -> dict[str, object]:
    return {"cell": cell, "attempt": attempt, "generation": 0, "worker": worker,
            "status": status, "at": 1_735_725_600.0 + at}


def test_a_cells_time_runs_from_its_take_to_done_and_only_done_counts() -> None:
    times = CellTimes()
    times.add([_entry("a", 1, "running", 0.0), _entry("b", 1, "running", 1.0, "w2"),
               _entry("a", 1, "done", 12.5), _entry("b", 1, "failed", 2.0),
               _entry("b", 2, "running", 3.0, "w2")])
    times.add([_entry("b", 2, "done", 23.0, "w2"), _entry("c", 1, "done", 30.0)])
    assert times.times == [12.5, 20.0]  # c's take was never seen: no time for it
    assert times.workers == {"w1", "w2"}


def test_the_eta_is_the_median_cell_times_the_cells_left_over_the_workers() -> None:
    assert eta_s([10.0, 30.0, 20.0], left=6, workers=2) == 60.0
    assert eta_text([10.0, 30.0, 20.0], left=6, workers=2) == \
        "ETA 0:01:00 (a cell takes 20.0 s, 2 workers)"
    assert eta_text([4000.0], left=3, workers=1) == "ETA 3:20:00 (a cell takes 4000.0 s, 1 worker)"


def test_no_eta_before_a_cell_is_done_and_none_once_every_cell_ended() -> None:
    assert eta_s([], left=12, workers=2) is None
    assert eta_text([], left=12, workers=2) == "ETA unknown (no cell done yet)"
    assert eta_text([5.0], left=0, workers=2) == "finished"
