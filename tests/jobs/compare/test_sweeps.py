"""Two records side by side: the factor over the headline rule, the gate, and its views."""

import json

import pytest

from jobs.compare.sweeps import commit_of, render, side_by_side
from jobs.errors import UserError
from jobs.record.model import Record
from tests.support.records import OLD, record


def rows(r: Record, other: Record, factor: float = 1.1) -> dict[tuple[str, str], str]:
    result = side_by_side(r, commit_of(r, None), other, commit_of(other, None), factor)
    return {(row.arm, row.metric): row.change for row in result.rows}


def test_a_planted_regression_fails_the_gate_and_an_aa_pair_passes() -> None:
    old = record(OLD)
    slower = record({"gather": OLD["gather"], "fused": [v / 2 for v in OLD["fused"]]})
    result = side_by_side(old, "main", slower, "main")
    assert result.gate == "fail" and result.counts["worse"] == 2  # decode and prefill
    fused = next(r for r in result.rows if r.arm == "fused" and r.metric == "decode tok/s")
    assert fused.comparison and fused.comparison.ratio.mean == pytest.approx(0.5)
    assert fused.comparison.answer == "differs" and "beyond the factor 1.1" in fused.reason
    # The same code measured again: values interleave with the first ones.
    again = record({arm: [v + 0.25 for v in values] for arm, values in OLD.items()})
    assert side_by_side(old, "main", again, "main").gate == "pass"
    # At 5 against 5 the rank test cannot say "same" (its same-threshold is 1).
    assert set(rows(old, again).values()) == {"not significant"}


def test_within_the_factor_or_faster_is_not_worse() -> None:
    old = record(OLD)
    a_bit = record({"gather": [v * 0.96 for v in OLD["gather"]], "fused": [v * 2 for v in
                                                                          OLD["fused"]]})
    changes = rows(old, a_bit)
    assert changes[("gather", "decode tok/s")] == "within the factor"
    assert changes[("fused", "decode tok/s")] == "better"
    assert rows(old, a_bit, factor=1.02)[("gather", "decode tok/s")] == "worse"


def test_not_significant_and_not_yet_known_are_shown_and_fail_nothing() -> None:
    old = record({arm: values[:3] for arm, values in OLD.items()})
    new = record({"gather": OLD["gather"][:3], "fused": [50.0, 51.0, 52.0]})
    result = side_by_side(old, "main", new, "main")
    # gather measured the same values twice (its ranges overlap: not significant); fused's
    # ranges are apart at 3 against 3, where the rank test cannot say different: not yet known.
    assert result.gate == "pass"
    assert result.counts["not significant"] == 2 and result.counts["not yet known"] == 2
    row = next(r for r in result.rows if r.arm == "fused")
    assert row.change == "not yet known" and row.comparison
    assert row.comparison.word == "not yet known"
    assert "would count as worse once decided" in row.reason
    assert ("2 comparisons are not significant and 2 comparisons are not yet known, which "
            "fails nothing") in result.summary
    assert "| not yet known | cuda |" in render(result)


def test_a_failure_on_the_new_side_fails_the_gate_and_one_sided_rows_do_not() -> None:
    old = record(OLD)
    broken = record(OLD, failed="fused")
    result = side_by_side(old, "main", broken, "main")
    assert result.gate == "fail" and result.counts["failed"] == 2
    assert "build failed: SyntaxError" in result.rows[-1].reason
    fixed = side_by_side(broken, "main", old, "main")
    assert fixed.gate == "pass" and fixed.counts["not measured"] == 2


def test_two_commits_of_one_sweep() -> None:
    both = record({"gather@main": OLD["gather"], "fused@main": OLD["fused"],
                   "gather@v2": OLD["gather"], "fused@v2": [v * 0.7 for v in OLD["fused"]]},
                  commits="[main, v2]")
    with pytest.raises(UserError, match="measured 2 commits"):
        commit_of(both, None)
    with pytest.raises(UserError, match="matches 0"):
        commit_of(both, "v3")
    result = side_by_side(both, commit_of(both, "main"), both, commit_of(both, "v2"))
    assert result.gate == "fail" and result.old.commit == "main" and result.new.commit == "v2"


def test_the_aa_noise_floor_of_either_side_raises_the_bar() -> None:
    # The A/A arm lies 6 % from the baseline: a 5 % change is within that noise. The larger
    # floor of the two sides counts: new's, 106 * 1.02 / 95 - 1.
    old = record({**OLD, "gather-aa": [v * 1.06 for v in OLD["gather"]]}, aa=True)
    new = record({"gather": [v * 0.95 for v in OLD["gather"]], "fused": OLD["fused"],
                  "gather-aa": [v * 1.06 for v in OLD["gather"]]}, aa=True)
    result = side_by_side(old, "main", new, "main", factor=1.01)
    gather = next(r for r in result.rows if r.arm == "gather" and r.metric == "decode tok/s")
    assert gather.comparison and gather.comparison.noise_floor == pytest.approx(
        108.12 / 95 - 1)
    assert gather.change == "not significant" and "A/A noise floor" in gather.reason


def test_overlapping_ranges_are_not_significant_and_same_needs_the_threshold() -> None:
    # The case: -27.9 % with ranges far overlapping, at n = 3, is not "same".
    wide = record({"gather": [40.0, 100.0, 120.0], "fused": [30.0, 60.0, 100.0]})
    narrow = record({"gather": [100.0, 101.0, 102.0], "fused": [60.0, 61.0, 62.0]})
    row = next(r for r in side_by_side(narrow, "main", wide, "main").rows
               if r.arm == "gather" and r.metric == "decode tok/s")
    assert row.change == "not significant" and row.comparison
    assert row.comparison.word == "not significant" and not row.comparison.ranges_apart
    # 12 against 12 interleaved: the rank test's p passes its same-threshold.
    twelve = [100.0 + i for i in range(12)]
    same = side_by_side(record({"gather": twelve, "fused": twelve}), "main",
                        record({"gather": [v + 0.5 for v in twelve], "fused": twelve}), "main")
    row = next(r for r in same.rows if r.arm == "gather" and r.metric == "decode tok/s")
    assert row.change == "same" and "same-threshold" in row.reason
    assert "| same | cuda | tinymoe-a3 | gather | decode tok/s |" in render(same)


def test_views_say_the_direction_the_rule_and_the_exit() -> None:
    result = side_by_side(record(OLD), "main", record({"gather": OLD["gather"], "fused": [
        v / 2 for v in OLD["fused"]]}, sweep_id="s2"), "main")
    text = render(result)
    assert "Higher is better for decode tok/s and prefill tok/s" in text
    assert "| **worse** | cuda | tinymoe-a3 | fused | decode tok/s | 151.00 (150.00 to 152.00) " \
           "| 75.50 (75.00 to 76.00) | -50.0% (-50.7% to -49.3%) | different (p = 0.00794, " \
           "n 5 vs 5) | new is slower than old beyond the factor 1.1" in text
    assert "(exit 1)." in text
    assert json.loads(result.model_dump_json())["gate"] == "fail"
    with pytest.raises(UserError, match="above 1"):
        side_by_side(record(OLD), "main", record(OLD), "main", factor=1.0)
