"""A sweep's progress as `status --watch` shows it, hyperfine's way: how many cells have
ended of all, and an ETA from the cells measured so far — the median time from a cell's take
to its `done`, times the cells left, over the workers running them. Read from the sweep's
log of state changes (each entry's time in epoch seconds), whose times are each worker's own
clock at both ends of an attempt."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median


@dataclass
class CellTimes:
    """Fed the log's entries in order: each `done` attempt's seconds from its take."""

    times: list[float] = field(default_factory=list)
    workers: set[str] = field(default_factory=set)  # every worker that took a cell
    _taken: dict[tuple[str, int], float] = field(default_factory=dict)

    def add(self, entries: Iterable[Mapping[str, object]]) -> None:
        for entry in entries:
            key = (str(entry["cell"]), int(str(entry.get("attempt", 0))))
            if entry["status"] == "running":
                self._taken[key] = float(str(entry["at"]))
                self.workers.add(str(entry.get("worker", "")))
            elif key in self._taken:
                taken = self._taken.pop(key)
                if entry["status"] == "done":
                    self.times.append(max(0.0, float(str(entry["at"])) - taken))


def eta_s(times: Sequence[float], left: int, workers: int) -> float | None:
    """Seconds until the last of `left` cells ends; None until a cell is done."""
    if not times:
        return None
    return median(times) * left / max(workers, 1)


def eta_text(times: Sequence[float], left: int, workers: int) -> str:
    eta = eta_s(times, left, workers)
    if left == 0:
        return "finished"
    if eta is None:
        return "ETA unknown (no cell done yet)"
    whole = round(eta)
    return (f"ETA {whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d} (a cell takes "
            f"{median(times):.1f} s, {max(workers, 1)} worker{'s' if workers > 1 else ''})")

