"""The record checker: a consistent record passes; each kind of damage is named."""



from jobs.record.check import check_record
from jobs.spec.cells import Cell
from jobs.spec.sweep import Sweep
from tests.support.preset_records import make


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
        update={"answer": "overlap"})})
    edited = record.model_copy(update={"groups": [group.model_copy(
        update={"rows": [group.rows[0], claimed, *group.rows[2:]]})]})
    assert any("decode comparison with the baseline does not follow from the measurements "
               "(faster:" in p for p in check_record(edited))
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
