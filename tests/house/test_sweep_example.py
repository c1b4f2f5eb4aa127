"""The sweep spec's example (docs/sweep.md) is a valid sweep for the shipped catalogue."""

import re
from pathlib import Path

from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep, catalogue_problems

SPEC = Path(__file__).parents[2] / "docs" / "sweep.md"


def test_the_spec_example_is_valid(catalogue: Catalogue) -> None:
    example = re.search(r"```yaml\n(.*?)```", SPEC.read_text(), re.S)
    assert example
    sweep, _ = load(Sweep, example.group(1), "docs/sweep.md")
    assert catalogue_problems(sweep, catalogue) == []
    assert sweep.question and sweep.profiles
