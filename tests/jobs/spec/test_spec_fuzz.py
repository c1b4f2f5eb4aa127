"""Any file a user can write ends as a valid sweep or as located sentences, never a crash."""

import re
import string
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.errors import SpecError
from jobs.spec.cells import expand
from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep, catalogue_problems
from tests.support.samples import SWEEP

LOCATED = re.compile(r"^f\.yaml:[0-9]+: \S.*")
KEYS = ["name", "target", "repo", "commits", "models", "backends", "build", "params", "arms",
        "recipe", "baseline", "env", "n", "warmup", "profiles", "phases", "question", "kind",
        "candidate", "control", "families", "cuda", "metal", "tinymoe-build",
        "tinymoe-bench-decode", "MLXCEL_FUSED_MOE", "prompt_tokens"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=True), st.text(max_size=12),
                    st.sampled_from(KEYS + ["main", "tinymoe-a3", "", "0", "-1", "../x"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6),
                                                  inner, max_size=5)), max_leaves=25)
base = yaml.safe_load(SWEEP)


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A YAML text: the valid unit sweep with parts replaced, dropped or added at random, or
    arbitrary text."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(alphabet=string.printable, max_size=200))
    spec = dict(base)
    for key in draw(st.lists(st.sampled_from(list(base) + KEYS), max_size=4)):
        action = draw(st.integers(0, 2))
        if action == 0:
            spec.pop(key, None)
        else:
            spec[key] = draw(values)
    return yaml.safe_dump(spec)


def _check(text: str, catalogue: Catalogue) -> str:
    try:
        sweep, root = load(Sweep, text, "f.yaml")
    except SpecError as error:
        assert error.problems and all(LOCATED.match(p) for p in error.problems), error.problems
        return "located"
    catalogue_problems(sweep, catalogue)  # must not raise either
    assert expand(sweep)
    return "valid"


SHIPPED = load(Catalogue, (Path(__file__).parents[2] / "workers" / "catalogues" /
                          "default.yaml").read_text(), "default.yaml")[0]
SEEN: dict[str, int] = {"valid": 0, "located": 0}


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_generated_specs_end_valid_or_located(text: str) -> None:
    SEEN[_check(text, SHIPPED)] += 1


def test_both_outcomes_were_generated() -> None:
    # Runs after the property test in this file: the generator reached both sides.
    assert SEEN["valid"] > 0 and SEEN["located"] > 0, SEEN
