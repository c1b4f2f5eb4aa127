"""The README's sweep example is a valid sweep for the shipped catalogue."""

import re
from pathlib import Path

from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep, catalogue_problems

README = Path(__file__).parents[2] / "README.md"


def test_readme_sweep_example_is_valid(catalogue: Catalogue) -> None:
    section = README.read_text().split("## Sweep spec", 1)[1]
    example = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert example
    sweep, _ = load(Sweep, example.group(1), "README.md")
    assert catalogue_problems(sweep, catalogue) == []
    assert sweep.question and sweep.profiles
