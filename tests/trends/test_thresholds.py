"""Step thresholds per testbed: an entry names what differs, the rest is the default; the A/A
floor measured on a testbed counts unless its entry names one; a bad file is a located sentence."""

import pytest

from jobs.errors import SpecError
from jobs.trends.changes import Thresholds
from jobs.trends.thresholds import ThresholdsFile, parse

FILE = """\
default:
  min_change: 0.05
testbeds:
  h200-lab:
    noise_multiple: 3
  gb10:
    noise_floor: 0.04
"""


def test_an_entry_changes_only_what_it_names() -> None:
    found = parse(FILE, "thresholds.yaml")
    h200 = found.for_testbed("h200-lab", None)
    assert (h200.min_change, h200.noise_multiple, h200.min_segment) == (0.05, 3.0, 3)
    other = found.for_testbed("mac-studio", None)
    assert (other.min_change, other.noise_multiple) == (0.05, Thresholds().noise_multiple)


def test_a_measured_floor_counts_unless_the_entry_names_one() -> None:
    found = parse(FILE, "thresholds.yaml")
    assert found.for_testbed("h200-lab", 0.01).noise_floor == 0.01
    assert found.for_testbed("gb10", 0.01).noise_floor == 0.04
    assert ThresholdsFile().for_testbed("any", None) == Thresholds()


def test_a_testbed_history_has_not_seen_is_named() -> None:
    [sentence] = parse(FILE, "thresholds.yaml").unknown({"h200-lab", "mac-studio"})
    assert sentence.startswith("the thresholds file names testbed gb10, which no point")


@pytest.mark.parametrize(("text", "said"), [
    ("testbeds:\n  h200:\n    min_chnage: 0.1\n",
     "thresholds.yaml:3: testbeds.h200.min_chnage: unknown key; check its spelling against "
     "the reference in docs/history.md"),
    ("default:\n  min_change: 'ten'\n",
     "thresholds.yaml:2: default.min_change: Input should be a valid number"),
    ("- 1\n", "thresholds.yaml:1: the file must be a YAML mapping of keys to values"),
])
def test_a_bad_file_is_a_located_sentence(text: str, said: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse(text, "thresholds.yaml")
    assert str(raised.value) == said
