"""The record checker: a consistent record passes; each kind of damage is named."""

from collections.abc import Callable

import pytest

from jobs.parsers.readings import KernelStat, PathCounts, ProfileReading
from jobs.record.attempts import AttemptResult, CellState
from jobs.record.check import check_record
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
    sweep = sweep.model_copy(update={"n": 4})
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


def test_a_consistent_record_passes(preset: tuple[Sweep, list[Cell]]) -> None:
    record = make(*preset)
    assert check_record(record) == []
    assert record.answer is not None
    outcomes = {(v.backend, v.model): v.outcome for v in record.answer.verdicts}
    assert outcomes[("cuda", "deepseek-v4-flash-4bit")] == "dominant"
    assert outcomes[("metal", "deepseek-v4-flash-4bit")] == "not settled"
    control = record.answer.controls[0]
    assert {f.relation for f in control.families} == {"general"}  # same gap as the control


def test_damage_is_named(preset: tuple[Sweep, list[Cell]]) -> None:
    record = make(*preset)
    group = record.groups[0]
    row = group.rows[1].model_copy(update={"decode_tps": group.rows[1].decode_tps.model_copy(  # type: ignore[union-attr]
        update={"mean": 99.0})})
    groups = [group.model_copy(update={"rows": [group.rows[0], row, *group.rows[2:]]}),
              *record.groups[1:]]
    verdicts = [record.answer.verdicts[0].model_copy(update={"outcome": "no gap"}),  # type: ignore[union-attr]
                *record.answer.verdicts[1:]]  # type: ignore[union-attr]
    bad = record.model_copy(update={
        "groups": groups, "cells_expected": record.cells_expected + 1,
        "answer": record.answer.model_copy(update={"verdicts": verdicts})})  # type: ignore[union-attr]
    problems = "\n".join(check_record(bad))
    assert "range 30.1 to 30.4 does not contain the mean 99.0" in problems
    assert "ratio against the baseline is not recomputable" in problems
    assert "some are unaccounted for" in problems
    assert "does not follow from the record's own tables" in problems


def test_an_arm_failed_on_one_backend(preset: tuple[Sweep, list[Cell]]) -> None:
    sweep, cells = preset
    lost = {c.id for c in cells if c.backend == "metal" and c.arm == "mlxcel"
            and c.model == "deepseek-v4-flash-4bit"}
    record = make(sweep, cells, drop=lost)
    verdict = next(v for v in record.answer.verdicts  # type: ignore[union-attr]
                   if v.backend == "metal" and v.model == "deepseek-v4-flash-4bit")
    assert verdict.outcome == "not settled" and verdict.missing
    reasons = {m.reason for m in record.missing}
    assert reasons == {"killed by SIGKILL (exit 137)"} and len(record.missing) == 4
    # Consistent and fully accounted for, but short of n: the check says so.
    assert check_record(record) == [
        "metal · deepseek-v4-flash-4bit · abc1234 / mlxcel: n = 0 of 4, fewer than 3 (the "
        "failed cells are listed with their reasons)"]
    cuda = next(v for v in record.answer.verdicts  # type: ignore[union-attr]
                if v.backend == "cuda" and v.model == "deepseek-v4-flash-4bit")
    assert cuda.outcome == "dominant"


def test_comparisons_repeats_and_evidence_are_recomputed() -> None:
    from tests.support.records import FASTER, adaptive_record

    record = adaptive_record(FASTER)
    assert check_record(record) == []
    group = record.groups[0]
    fused = group.rows[1]
    assert fused.decode_comparison
    claimed = fused.model_copy(update={"decode_comparison": fused.decode_comparison.model_copy(
        update={"answer": "no effect"})})
    edited = record.model_copy(update={"groups": [group.model_copy(
        update={"rows": [group.rows[0], claimed, *group.rows[2:]]})]})
    assert any("decode comparison with the baseline does not follow from the measurements "
               "(differs:" in p for p in check_record(edited))
    fewer = record.model_copy(update={"skipped": record.skipped[1:],
                                      "cells_expected": record.cells_expected - 1})
    assert any("cells neither measured, missing nor skipped: " in p for p in check_record(fewer))
    early = record.skipped[0].model_copy(update={"repeat": 4, "cell_id": "elsewhere"})
    moved = record.model_copy(update={"skipped": [early, *record.skipped],
                                      "cells_expected": record.cells_expected + 1})
    assert any("listed as skipped are not the ones the rule did not need" in p
               for p in check_record(moved))
    blind = record.model_copy(update={"evidence": record.evidence[1:]})
    assert any("carries no sha256 of the attempt it read" in p for p in check_record(blind))
    old = record.model_copy(update={"schema_version": 1})
    assert check_record(old)[0].startswith("the record has schema version 1")


def test_a_worker_that_ran_every_repeat_is_still_accounted_for() -> None:
    from tests.support.records import FASTER, adaptive_record

    record = adaptive_record(FASTER, run_all=True)
    assert not record.skipped and record.cells_measured == 18
    assert record.groups[0].repeats.needed == [4]  # type: ignore[union-attr]
    assert check_record(record) == []
