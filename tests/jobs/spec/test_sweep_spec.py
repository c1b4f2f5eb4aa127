"""Sweep files: strict validation, one located sentence per problem."""

import pytest

from jobs.errors import SpecError
from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load, located
from jobs.spec.sweep import Sweep, catalogue_problems
from tests.support.samples import SWEEP


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load(Sweep, text, "s.yaml")
    return caught.value.problems


def test_valid_sweep_loads() -> None:
    sweep, _ = load(Sweep, SWEEP, "s.yaml")
    assert sweep.baseline.name == "gather" and sweep.target.commits == ["main", "v2"]


def test_single_commit_may_be_a_string() -> None:
    sweep, _ = load(Sweep, SWEEP.replace("[main, v2]", "abc123"), "s.yaml")
    assert sweep.target.commits == ["abc123"]


def test_unknown_key_is_named_with_its_line() -> None:
    text = SWEEP.replace("    env: {MLXCEL_FUSED_MOE: \"0\"}", "    enviroment: {A: b}")
    assert problems(text) == ["s.yaml:13: arms.0.enviroment: unknown key; check its spelling "
                              "against the reference in docs/sweep.md"]


def test_every_problem_is_reported_not_only_the_first() -> None:
    text = SWEEP.replace("n: 3", "n: 0").replace("warmup: 1", "warmup: many")
    found = problems(text)
    assert found == ["s.yaml:20: n: Input should be greater than or equal to 1",
                     "s.yaml:21: warmup: Input should be a valid integer"]


def test_exactly_one_baseline() -> None:
    [problem] = problems(SWEEP.replace("    baseline: true\n", ""))
    assert "exactly one arm must have 'baseline: true', found 0 (none)" in problem


def test_missing_key_and_bad_yaml_and_duplicates() -> None:
    assert problems(SWEEP.replace("models: [tinymoe-a3, tinymoe-b5]\n", "")) == [
        "s.yaml:1: models: required key is missing"]
    [bad] = problems(SWEEP.replace("n: 3", "n: [3"))
    assert bad.startswith("s.yaml:21: not valid YAML: expected ',' or ']'")
    assert problems(SWEEP + "n: 4\n") == [
        "s.yaml:22: key 'n' appears twice in one mapping; keep one"]
    assert problems("- a\n- b\n") == ["s.yaml:1: the file must be a YAML mapping of keys "
                                      "to values"]


def test_arm_models_must_be_in_the_sweep() -> None:
    [problem] = problems(SWEEP.replace("models: [tinymoe-b5]", "models: [ghost]"))
    assert "arm long names models not in 'models': ghost" in problem


def test_catalogue_problems_are_located(catalogue: Catalogue) -> None:
    text = (SWEEP.replace("params: {prompt_tokens: 1024}", "params: {prompt_tokens: lots}")
            .replace("metal: {build: tinymoe-build}", "metal: {build: tinymoe-bench-decode}")
            .replace("MLXCEL_FUSED_MOE", "LD_PRELOAD"))
    sweep, root = load(Sweep, text, "s.yaml")
    assert located("s.yaml", root, catalogue_problems(sweep, catalogue)) == [
        "s.yaml:8: backends.metal: recipe tinymoe-bench-decode is a bench recipe, "
        "not a build recipe",
        "s.yaml:13: arms.0.env: env LD_PRELOAD may not be overridden; the recipe allows "
        "MLXCEL_FUSED_MOE, MLXCEL_FUSED_MOE_MAX_DFF, MLXCEL_TRACE_ARCH, "
        "MLXCEL_PROFILE_QWEN3_MOE_DETAIL, MLXCEL_BENCH_PHASE_MARKS, MLXCEL_EXPORT_DECODE_DOT",
        "s.yaml:18: arms.2.params: parameter 'prompt_tokens' must be a int, got 'lots'"]


def test_numbers_are_strict() -> None:
    assert problems(SWEEP.replace("n: 3", 'n: "3"')) == [
        "s.yaml:20: n: Input should be a valid integer"]
    assert problems(SWEEP.replace("n: 3", "n: 3.0")) == [
        "s.yaml:20: n: Input should be a valid integer"]


def test_a_parameter_that_is_not_a_finite_number_is_refused_in_one_sentence() -> None:
    # The sweep's JSON is written by orjson, which has no NaN or infinity: refused here, with
    # its line, rather than stored as null and found unreadable later.
    for value in (".nan", "-.inf"):
        found = problems(SWEEP.replace("prompt_tokens: 1024", f"prompt_tokens: {value}"))
        assert len(found) == 1 and "params.prompt_tokens: a parameter must be a finite " \
            "number" in found[0] and found[0].startswith("s.yaml:"), found
    sweep, _ = load(Sweep, SWEEP.replace("prompt_tokens: 1024", "prompt_tokens: 0.5"), "s.yaml")
    assert 0.5 in [v for arm in sweep.arms for v in arm.params.values()]
