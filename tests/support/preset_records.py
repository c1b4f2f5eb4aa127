"""A record of the MoE preset made from sample attempts (bench readings and profiles), for the
checker's and the study's tests."""

from collections.abc import Callable

import pytest

from jobs.parsers.readings import KernelStat, PathCounts, ProfileReading
from jobs.record.attempts import AttemptResult, CellState
from jobs.record.model import Record, build_record
from jobs.spec.cells import Cell, expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.presets import render
from tests.support.records import result, with_evidence

DECODE = {"mlx-vlm": 40.0, "mlxcel": 30.0, "fused-off": 35.0}


@pytest.fixture
def preset() -> tuple[Sweep, list[Cell]]:
    sweep = load(Sweep, render("moe-decode-gap", "abc1234", "/srv/mlxcel"), "p.yaml")[0]
    # n = 4: at 3 against 3 the rank test cannot say "different", so no verdict would settle.
    sweep = sweep.model_copy(update={"n": 4, "adaptive": None})
    return sweep, expand(sweep)


def profile(cell: Cell) -> AttemptResult:
    base = result(cell, None)
    reading = ProfileReading(
        tool="nsys-delta" if cell.backend == "cuda" else "metal-dot", tokens=[400, 200],
        kernels=[KernelStat(name="gather_qmv_kernel", launches_per_token=129,
                            us_per_token=20000.0 if cell.backend == "cuda" else None),
                 KernelStat(name="sdpa_vector_kernel", launches_per_token=43,
                            us_per_token=4000.0 if cell.backend == "cuda" else None)],
        paths=PathCounts(decode_gather=430) if "qwen3" not in cell.model
        else PathCounts(decode_fused=430))
    return base.model_copy(update={"profile": reading, "runs": [],
                                   "target": {"mlx_pin": "81ba1c6a" * 5}})


def make(sweep: Sweep, cells: list[Cell], drop: set[str] = frozenset(),
         decode: Callable[[Cell], float] | None = None, load1: float = 0.2) -> Record:
    results, states = {}, {}
    for c in cells:
        if c.id in drop:
            states[c.id] = CellState(status="failed", reason="killed by SIGKILL (exit 137)")
            continue
        if c.kind == "profile":
            results[c.id] = profile(c)
        else:
            r = result(c, decode(c) if decode else DECODE[c.arm] + c.repeat * 0.1, load1)
            results[c.id] = r.model_copy(update={"target": {"mlx_pin": "81ba1c6a" * 5}})
        states[c.id] = CellState(status="done", attempt=1)
    record = with_evidence(build_record("s1", sweep, cells, states, results, {},
                                        "2026-11-30T12:00:00+00:00"), results)
    return record.model_copy(update={"meta": record.meta.model_copy(update={"builds": [
        {"commit": "81ba1c6a" * 5, "backend": "cuda", "worker": "gb10-a", "recipe": "b",
         "wall_s": 1500.0, "built_at": "x", "command": [["make", "release-cuda"]]}]})})
