"""The verdict's and the control's words say no more than the headline answer on unflagged runs:
A/A pairs (the same code as candidate and baseline) never give "gap", "general" or
"narrower", and `check` fails a record whose sentences were edited."""

from collections.abc import Callable

import pytest

from jobs.record.check import check_record
from jobs.record.model import Record
from jobs.spec.cells import Cell, expand
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from runner.presets import render
from tests.support.preset_records import make

CONTROL = "qwen3-30b-a3b-4bit"
FAMILY = "deepseek-v4-flash-4bit"
# One run's decode tok/s, by arm and repeat: the A/A pair is one distribution measured twice.
AA = {"mlx-vlm": [40.0, 40.3, 39.8, 40.1], "mlxcel": [40.1, 39.9, 40.2, 40.0],
      "fused-off": [40.2, 39.9, 40.0, 40.1]}
# Ranges apart by chance at n = 3 against 3, where the rank test's p cannot go below 0.1.
APART = {"mlx-vlm": [40.0, 40.1, 40.2], "mlxcel": [39.0, 39.1, 39.2],
         "fused-off": [40.0, 40.1, 40.2]}
WORDS_OF_AN_EFFECT = {"general", "narrower", "family-specific"}


def sweep(n: int) -> tuple[Sweep, list[Cell]]:
    s = load(Sweep, render("moe-decode-gap", "abc1234", "/srv/mlxcel"), "p.yaml")[0]
    s = s.model_copy(update={"n": n, "adaptive": None})
    return s, expand(s)


def built(n: int, decode: Callable[[Cell], float], load1: float = 0.2) -> Record:
    return make(*sweep(n), decode=decode, load1=load1)


def by_table(table: dict[str, list[float]], models: set[str] | None = None
             ) -> Callable[[Cell], float]:
    """Every model from `table` (or only `models`; the others 30 vs 40 tok/s: a real gap)."""
    def decode(c: Cell) -> float:
        if models is None or c.model in models:
            return table[c.arm][c.repeat - 1]
        return {"mlx-vlm": 40.0, "mlxcel": 30.0, "fused-off": 35.0}[c.arm] + c.repeat * 0.1
    return decode


def verdicts(r: Record) -> dict[tuple[str, str], tuple[str, str]]:
    assert r.answer is not None
    return {(v.backend, v.model): (v.outcome, v.reason) for v in r.answer.verdicts}


def relations(r: Record) -> dict[tuple[str, str], str]:
    assert r.answer is not None
    return {(c.backend, f.model): f.relation for c in r.answer.controls for f in c.families}


def test_an_aa_pair_is_no_gap_and_no_gap_in_either() -> None:
    r = built(4, by_table(AA))
    assert check_record(r) == []
    assert {o for o, _ in verdicts(r).values()} == {"no gap"}
    assert all(why.startswith("not significant: the ranges overlap")
               for _, why in verdicts(r).values())
    assert set(relations(r).values()) == {"no gap in either"}


def test_ranges_apart_without_the_rank_test_is_more_repeats_not_a_gap() -> None:
    r = built(3, by_table(APART))
    assert check_record(r) == []
    for (backend, _), (outcome, why) in verdicts(r).items():
        assert outcome == "not settled", (backend, outcome, why)
        assert why.startswith("more repeats: the ranges are apart, but at n = 3 against 3")
    assert set(relations(r).values()) == {"not settled"}


def test_a_busy_host_is_not_settled_host_even_where_the_ranges_are_apart() -> None:
    """The issue's case: identical code on a host too busy for the gate (+40 %, ranges apart,
    every run flagged): not a gap, and the reason says host."""
    plus40 = {"mlx-vlm": [40.0, 40.1, 40.2, 40.3], "mlxcel": [28.0, 28.1, 28.2, 28.3],
              "fused-off": [40.0, 40.1, 40.2, 40.3]}
    r = built(4, by_table(plus40), load1=5.2)
    assert check_record(r) == []
    for outcome, why in verdicts(r).values():
        assert outcome == "not settled" and why.startswith("host: "), why
        assert "too few unflagged runs to compare" in why
    assert set(relations(r).values()) == {"not settled"}
    n = sum(len(g.measurements) for g in r.groups)
    assert r.host_sentence.startswith(f"{n} of {n} measurements carry a flag")
    assert "load1 5.20 before the run, over the gate's threshold 0.6" in r.host_sentence


def test_a_no_effect_family_is_never_narrower() -> None:
    """The family's A/A pair against a control with a real gap: the old range rule called it
    "narrower" (its ratio range lies above the control's)."""
    r = built(4, by_table(AA, models={FAMILY, "inkling-small-mlx-4bit", "inkling-small-nvfp4"}))
    assert check_record(r) == []
    got = relations(r)
    assert got[("cuda", FAMILY)] == "no gap in the family"
    assert not WORDS_OF_AN_EFFECT & set(got.values())


def test_a_family_gap_beside_a_control_without_one_is_family_specific() -> None:
    r = built(4, by_table(AA, models={CONTROL}))
    assert relations(r)[("cuda", FAMILY)] == "family-specific"
    assert verdicts(r)[("cuda", FAMILY)][0] == "dominant"


@pytest.mark.parametrize("edit", ["verdict", "control", "host"])
def test_check_fails_an_edited_sentence(edit: str) -> None:
    r = built(4, by_table(AA))
    assert r.answer is not None
    a = r.answer
    if edit == "verdict":
        v = a.verdicts[0].model_copy(update={"reason": "a measured gap of 40 %"})
        r = r.model_copy(update={"answer": a.model_copy(update={"verdicts": [v, *a.verdicts[1:]]})})
        expected = "does not follow from the record's own tables"
    elif edit == "control":
        c = a.controls[0]
        f = c.families[0].model_copy(update={"relation": "general"})
        c = c.model_copy(update={"families": [f, *c.families[1:]]})
        r = r.model_copy(update={"answer": a.model_copy(update={"controls": [c, *a.controls[1:]]})})
        expected = "the control comparison does not match the control's own rows"
    else:
        r = r.model_copy(update={"host_sentence": "Every measurement ran on an idle host under "
                                 "the host lease, alone, and quietly."})
        expected = "the host sentence does not follow from the measurements' flags"
    assert any(expected in p for p in check_record(r)), check_record(r)
