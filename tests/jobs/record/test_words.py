"""One word per comparison, the same in the record's tables, its JSON and `check`: faster or
slower (the headline rule says differs), not significant, same, and not yet known. Each case
also shows that `check` fails a record whose printed word its own measurements do not give."""

import json

from jobs.record.check import check_record
from jobs.record.model import Record
from jobs.statistics.headline import Word
from jobs.views.markdown import render
from tests.support.records import record

TWELVE = [20.0 + i / 10 for i in range(12)]


def fused_word(r: Record) -> Word:
    c = r.groups[0].rows[1].decode_comparison
    assert c is not None
    return c.word


def word_edited(r: Record, to: Word) -> Record:
    """The record as its JSON would read after someone changed fused's decode word."""
    raw = json.loads(r.model_dump_json())
    raw["groups"][0]["rows"][1]["decode_comparison"]["word"] = to
    return Record.model_validate(raw)


def word_problems(r: Record) -> list[str]:
    return [p for p in check_record(r) if "decode comparison prints" in p]


def assert_check_catches_an_edited_word(r: Record, said: Word, edited_to: Word) -> None:
    assert word_problems(r) == []
    problems = word_problems(word_edited(r, edited_to))
    assert len(problems) == 1
    assert f'/ fused: the decode comparison prints "{edited_to}", but its measurements say ' \
        f'"{said}"' in problems[0]

def test_ranges_apart_and_the_rank_test_different_read_faster_or_slower() -> None:
    faster = record({"gather": [20.0, 21.0, 22.0, 21.5], "fused": [30.0, 33.0, 36.0, 31.0]})
    slower = record({"gather": [20.0, 21.0, 22.0, 21.5], "fused": [10.0, 11.0, 12.0, 11.5]})
    assert fused_word(faster) == "faster" and fused_word(slower) == "slower"
    assert "), **faster** |" in render(faster) and "| **slower** |" in render(slower)
    assert_check_catches_an_edited_word(faster, "faster", "same")


def test_overlapping_ranges_read_not_significant_never_no_effect() -> None:
    # The case: +19.2 %-like spreads at 3 against 3, the ranges far overlapping.
    wide = record({"gather": [40.0, 100.0, 120.0], "fused": [30.0, 60.0, 100.0]})
    c = wide.groups[0].rows[1].decode_comparison
    assert c and c.answer == "overlap" and c.word == "not significant"
    text = render(wide)
    assert "), **~** |" in text  # asv's mark in the arm table
    assert "| **not significant** |" in text  # the word in the comparisons table
    assert "no effect" not in text and "no_effect" not in wide.model_dump_json()
    assert_check_catches_an_edited_word(wide, "not significant", "same")


def test_same_only_where_the_rank_test_reaches_its_same_threshold() -> None:
    same = record({"gather": TWELVE, "fused": [v + 0.05 for v in TWELVE]})
    c = same.groups[0].rows[1].decode_comparison
    assert c and c.word == "same" and c.rank.p > c.rank.same_above
    assert "), **same** |" in render(same)
    assert_check_catches_an_edited_word(same, "same", "not significant")


def test_ranges_apart_with_too_few_values_for_any_decision_read_not_yet_known() -> None:
    # At 3 against 3 ranges apart give p = 0.1: the rank test cannot say different yet.
    apart = record({"gather": [20.0, 21.0, 22.0], "fused": [30.0, 33.0, 36.0]})
    c = apart.groups[0].rows[1].decode_comparison
    assert c and c.answer == "undecided" and c.word == "not yet known"
    assert "), **not yet known** |" in render(apart)
    assert_check_catches_an_edited_word(apart, "not yet known", "faster")
