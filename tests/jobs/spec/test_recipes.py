"""Recipes: typed parameters, per-argument templates, env overrides the recipe allows."""

import pytest
from pydantic import ValidationError

from jobs.errors import UserError
from jobs.spec.recipes import Recipe, invocation

BUILTINS = {"build": "/b", "model_dir": "/models/m", "backend": "cuda"}


def recipe(**extra: object) -> Recipe:
    spec: dict[str, object] = {
        "kind": "bench", "parser": "mlxcel-bench-decode",
        "command": ["{build}/bench", "-m", "{model_dir}", "-p", "{prompt}",
                    {"when": "ignore_eos", "args": ["--ignore-eos"]}],
        "params": {"prompt": {"type": "str", "default": "x"},
                   "ignore_eos": {"type": "bool", "default": False},
                   "tokens": {"type": "int", "default": 512}},
        "env": {"MODELS_DIR": "{model_dir}/.."}, "allow_env": ["MLXCEL_*"]}
    spec.update(extra)
    return Recipe.model_validate(spec)


def test_values_stay_one_argument_and_no_shell_sees_them() -> None:
    call = invocation(recipe(), "cuda", {"prompt": "a b; rm -rf / $(x)"}, {}, BUILTINS)
    assert call.argv == ["/b/bench", "-m", "/models/m", "-p", "a b; rm -rf / $(x)"]
    assert call.env == {"MODELS_DIR": "/models/m/.."}


def test_bool_parameter_adds_its_arguments() -> None:
    call = invocation(recipe(), "cuda", {"ignore_eos": True}, {}, BUILTINS)
    assert call.argv[-1] == "--ignore-eos"


def test_env_override_must_be_allowed() -> None:
    call = invocation(recipe(), "cuda", {}, {"MLXCEL_FUSED_MOE": "0"}, BUILTINS)
    assert call.env["MLXCEL_FUSED_MOE"] == "0"
    with pytest.raises(UserError, match="env LD_PRELOAD may not be overridden"):
        invocation(recipe(), "cuda", {}, {"LD_PRELOAD": "/x.so"}, BUILTINS)


@pytest.mark.parametrize("given, message", [
    ({"tokens": True}, "parameter 'tokens' must be a int"),
    ({"tokens": "512"}, "parameter 'tokens' must be a int"),
    ({"bogus": 1}, "unknown parameter 'bogus'"),
])
def test_parameter_types_are_checked(given: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        invocation(recipe(), "cuda", given, {}, BUILTINS)  # type: ignore[arg-type]


def test_per_backend_variant_and_unserved_backend() -> None:
    r = recipe(backends={"metal": {"command": ["{build}/metal-bench"], "env": {"A": "1"}}})
    call = invocation(r, "metal", {}, {}, BUILTINS)
    assert call.argv == ["/b/metal-bench"] and call.env["A"] == "1"
    with pytest.raises(UserError, match="no variant for backend 'cuda'"):
        invocation(r, "cuda", {}, {}, BUILTINS)


@pytest.mark.parametrize("extra, message", [
    ({"command": ["{nothing}"]}, "{nothing} is neither a parameter nor a built-in"),
    ({"command": ["{build.x}"]}, "must be a plain name"),
    ({"command": [{"when": "tokens", "args": ["-x"]}]}, "must name a bool parameter"),
    ({"parser": None}, "needs a parser"),
    ({"shell": "bash -c"}, "Extra inputs are not permitted"),
])
def test_bad_recipes_are_refused_when_loaded(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        recipe(**extra)
