"""How the benchmark states a figure: median (min to max) over repeats, percentiles over
samples, ratios against the baseline of the same run, and the load the machine carried."""

import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

TIME = shutil.which("time", path="/usr/bin:/bin") or "/usr/bin/time"  # GNU time, for peak RSS
# The floors block's name for the record's libraries imported alone (tests/bench/floors.py),
# which the report sets beside the record's own peak memory.
RECORD_IMPORTS = "`python -c` the same and the record's numpy and matplotlib"


def spread(xs: list[float]) -> dict[str, float]:
    """median, min and max (and n) of repeated figures."""
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def percentile(xs: list[float], p: float) -> float:
    """Nearest-rank percentile: with fewer than 100 samples p99 is the largest."""
    ordered = sorted(xs)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def ratios(ours: list[float], theirs: list[float]) -> list[float]:
    """Per-repeat ratios of paired, interleaved measurements."""
    return [a / b for a, b in zip(ours, theirs, strict=True)]


def fmt(s: dict[str, float], unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
    m, lo, hi = (s[k] * scale for k in ("median", "min", "max"))
    return f"{m:.{digits}f}{unit} ({lo:.{digits}f} to {hi:.{digits}f})"


def fmt_x(s: dict[str, float]) -> str:
    return f"{s['median']:.2f}x ({s['min']:.2f} to {s['max']:.2f})"


@contextmanager
def block(results: dict[str, Any], name: str) -> Iterator[dict[str, Any]]:
    """A block of measurements, with load1 before and after and its wall time."""
    out: dict[str, Any] = {"load1_before": os.getloadavg()[0]}
    start = time.monotonic()
    print(f"[bench] {name}: load1 {out['load1_before']:.2f}", flush=True)
    yield out
    out["load1_after"] = os.getloadavg()[0]
    out["wall_s"] = round(time.monotonic() - start, 1)
    results[name] = out
    print(f"[bench] {name}: done in {out['wall_s']} s, load1 {out['load1_after']:.2f}",
          flush=True)


def interleave(rounds: int, contestants: Mapping[str, Callable[[], object]]
               ) -> dict[str, list[float]]:
    """Every contestant once per round, in an order rotated every round; seconds each."""
    names = list(contestants)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            contestants[name]()
            times[name].append(time.perf_counter() - start)
    return times


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
