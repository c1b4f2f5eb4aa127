"""Adaptive repeats and the A/A arm: the cells a sweep expands, and when the worker skips one."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.errors import SpecError
from jobs.parsers.readings import BenchReading
from jobs.spec.cells import expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.statistics.adaptive import cell_needed, pending, walk
from jobs.statistics.headline import compare, noise_floor
from jobs.statistics.spans import Span
from tests.support.records import ONE_GROUP_SWEEP

ONE_GROUP = ONE_GROUP_SWEEP


def sweep(extra: str = "adaptive: {max_n: 6}\naa: true\n") -> Sweep:
    return load(Sweep, ONE_GROUP + extra, "s.yaml")[0]


def reading(decode: float, prefill: float | None = None) -> BenchReading:
    return BenchReading(prompt_tokens=512, generated_tokens=128, decode_tps=decode,
                        prefill_tps=prefill if prefill is not None else decode * 10)


def test_adaptive_repeats_follow_the_regular_ones_in_rotating_order() -> None:
    cells = expand(sweep())
    arms = ["gather", "fused", "long", "gather-aa"]
    assert [(c.repeat, c.arm) for c in cells[:8]] == [
        (1, a) for a in arms] + [(2, a) for a in arms[1:] + arms[:1]]
    assert [c.repeat for c in cells if c.adaptive] == [4] * 4 + [5] * 4 + [6] * 4
    assert all(not c.adaptive for c in cells if c.repeat <= 3)
    assert [c.arm for c in cells if c.repeat == 6] == ["fused", "long", "gather-aa", "gather"]
    assert len({c.id for c in cells}) == len(cells) == 24


def test_the_aa_arm_is_the_baseline_under_another_name() -> None:
    cells = expand(sweep())
    base = next(c for c in cells if c.arm == "gather")
    aa = next(c for c in cells if c.arm == "gather-aa")
    assert aa.aa and not aa.baseline and aa.run == base.run and aa.id != base.id


def test_spec_errors_for_adaptive_and_aa() -> None:
    with pytest.raises(SpecError, match="adaptive.max_n .3. must exceed n .3."):
        sweep("adaptive: {max_n: 3}\n")
    clash = ONE_GROUP.replace("name: long", "name: gather-aa") + "aa: true\n"
    with pytest.raises(SpecError, match="already has an arm of that name"):
        load(Sweep, clash, "s.yaml")


def test_the_worker_skips_a_repeat_once_every_comparison_is_decided() -> None:
    s = sweep("adaptive: {max_n: 6}\n")
    cells = [c for c in expand(s) if c.kind == "bench"]
    values = {"gather": 40.0, "fused": 30.0, "long": 40.0}
    spread = {1: -0.5, 2: 0.0, 3: 0.5, 4: 0.2, 5: -0.2, 6: 0.1}
    readings = {}
    needed = {}
    for cell in cells:  # in queue order, as one worker meets them
        needed[cell.id] = cell_needed(cell, cells, readings)
        if needed[cell.id]:
            readings[cell.id] = reading(values[cell.arm] + spread[cell.repeat] * (
                1 if cell.arm != "long" else -1))
    # Repeat 4 runs: fused is apart from gather at 3 against 3 (p = 0.1); long overlaps.
    assert all(needed[c.id] for c in cells if c.repeat <= 4)
    assert not any(needed[c.id] for c in cells if c.repeat > 4)
    replay = walk(cells, readings, set(), 3, 6)
    assert replay.stopped == "decided" and replay.needed == [4]
    assert "decided after repeat 4" in replay.reason


def test_a_change_inside_the_noise_floor_runs_to_the_cap() -> None:
    s = sweep()
    cells = [c for c in expand(s) if c.kind == "bench"]
    # fused is 5 % faster, but identical code (gather-aa) spreads by about 10 %.
    offsets = {"gather": [0, 1, 2, 1, 0, 2], "gather-aa": [-2, 2, 0, 1, -1, 0],
               "fused": [2.5, 3, 3.5, 3, 2.8, 3.2], "long": [0.5, 1.5, 1, 1, 0.6, 1.2]}
    readings = {c.id: reading(20 + offsets[c.arm][c.repeat - 1]) for c in cells}
    replay = walk(cells, readings, set(), 3, 6)
    assert replay.stopped == "cap" and replay.needed == [4, 5, 6]
    assert "fused (decode tok/s)" in replay.pending
    assert "the cap (max_n = 6) stopped the repeats" in replay.reason


def test_a_repeat_still_running_stops_the_replay() -> None:
    s = sweep("adaptive: {max_n: 6}\n")
    cells = [c for c in expand(s) if c.kind == "bench"]
    values = {"gather": 40.0, "fused": 30.0, "long": 35.0}
    readings = {c.id: reading(values[c.arm] + c.repeat * 0.1) for c in cells if c.repeat <= 3}
    waiting = {c.id for c in cells if c.repeat == 4}
    replay = walk(cells, readings, waiting, 3, 6)
    assert replay.stopped == "waiting" and replay.needed == [4]


def test_regular_cells_always_run() -> None:
    cells = expand(sweep())
    assert all(cell_needed(c, cells, {}) for c in cells if not c.adaptive)


samples = st.lists(st.floats(min_value=1.0, max_value=50.0, allow_nan=False), min_size=1,
                   max_size=8)


@settings(max_examples=40, deadline=None)
@given(base=samples, arm=samples, aa=samples)
def test_the_worker_and_the_record_reach_the_same_answer(base: list[float], arm: list[float],
                                                         aa: list[float]) -> None:
    """The worker's rule (no scipy) and the record's comparison (scipy) agree."""
    left = pending({"m": {"b": base, "x": arm, "aa": aa}}, "b", "aa")
    floor_c = compare("m", aa, base, None)
    floor = noise_floor(Span.of(aa), Span.of(base))
    record = compare("m", arm, base, floor)
    assert record and floor_c
    assert ("x (m)" in left) == (record.answer == "undecided")
    assert ("aa (m)" in left) == (floor_c.answer == "undecided")


def test_the_workers_call_keeps_it_one_thread() -> None:
    """The worker decides before a measured run: nothing it imports may start a thread."""
    import subprocess
    import sys

    code = ("from pathlib import Path; from jobs.statistics.adaptive import cell_needed; "
            "from jobs.spec.cells import expand; from jobs.spec.specfile import load; "
            "from jobs.spec.sweep import Sweep; import sys; "
            "cells = expand(load(Sweep, sys.stdin.read(), 's.yaml')[0]); "
            "cell_needed(cells[-1], cells, {}); "
            "print(len(list(Path('/proc/self/task').iterdir())))")
    done = subprocess.run([sys.executable, "-c", code], input=ONE_GROUP + "adaptive: {max_n: 5}\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
