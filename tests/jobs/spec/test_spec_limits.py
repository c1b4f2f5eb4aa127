"""A hostile or broken sweep file costs milliseconds and one located sentence, never a long
hold or a traceback: aliases that expand, nesting, huge numbers, huge files."""

import re

import pytest

from jobs.errors import SpecError
from jobs.spec.specfile import MAX_BYTES, MAX_DEPTH, load
from jobs.spec.sweep import Sweep
from tests.support.samples import SWEEP


def laughs(lines: int) -> str:
    """Each line's list holds nine aliases of the line before: 9**lines values."""
    text = 'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
    for i in range(1, lines):
        name, before = chr(97 + i), chr(96 + i)
        text += f"{name}: &{name} [" + ", ".join([f"*{before}"] * 9) + "]\n"
    return text


def refused(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load(Sweep, text, "s.yaml")
    return caught.value.problems


def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    problems = refused(laughs(9))
    assert len(problems) == 1, problems
    found = re.fullmatch(r"s\.yaml:1: its aliases expand to ([0-9,]+) values, more than "
                         r"100,000; write the values out or use fewer aliases", problems[0])
    assert found and int(found.group(1).replace(",", "")) > 9 ** 9


def test_deep_nesting_is_refused() -> None:
    problems = refused("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert problems == [f"s.yaml:1: it nests more than {MAX_DEPTH} levels deep; a sweep needs "
                        "a few"]


def test_a_huge_integer_is_refused() -> None:
    problems = refused(SWEEP.replace("n: 3", "n: " + "9" * 5001))
    assert len(problems) == 1 and "a number of 5,001 characters" in problems[0]


def test_a_huge_file_is_refused() -> None:
    problems = refused("# " + "x" * MAX_BYTES + "\n" + SWEEP)
    assert len(problems) == 1 and "more than 1,048,576" in problems[0]


def test_aliases_a_user_writes_still_work() -> None:
    text = SWEEP.replace("arms:", "defaults: &env {MLXCEL_FUSED_MOE: \"0\"}\narms:", 1)
    with pytest.raises(SpecError) as caught:  # `defaults` is not a sweep key ...
        load(Sweep, text, "s.yaml")
    assert caught.value.problems[0].endswith("defaults: unknown key; check its spelling "
                                             "against the reference in docs/sweep.md")
    sweep, _ = load(Sweep, SWEEP.replace('env: {MLXCEL_FUSED_MOE: "0"}',
                                         'env: &off {MLXCEL_FUSED_MOE: "0"}'), "s.yaml")
    assert sweep.arms[0].env == {"MLXCEL_FUSED_MOE": "0"}  # ... while an anchor is fine
