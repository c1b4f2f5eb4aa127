"""The sweep spec: what to measure, where, at which commit, how many times."""

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from jobs.model import Scalar, Strict
from jobs.recipes import Catalogue, env_problems, param_problems

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError(f"{value!r} must be letters, digits, '.', '_' or '-'")
    return value


def _listify(value: object) -> object:
    return [value] if isinstance(value, str) else value


Name = Annotated[str, AfterValidator(_name)]


class Target(Strict):
    repo: str = Field(min_length=1, description="git URL or local path")
    commits: Annotated[list[Annotated[str, Field(min_length=1)]],
                       BeforeValidator(_listify), Field(min_length=1)]


class Arm(Strict):
    name: Name
    recipe: str
    params: dict[str, Scalar] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    baseline: bool = False
    models: list[str] | None = Field(default=None, description="run only on these models")


class Backend(Strict):
    build: str
    params: dict[str, Scalar] = Field(default_factory=dict)


class Sweep(Strict):
    name: Name
    target: Target
    models: list[Name] = Field(min_length=1)
    backends: dict[Name, Backend] = Field(min_length=1)
    arms: list[Arm] = Field(min_length=1)
    n: int = Field(default=3, ge=1, le=100)
    warmup: int = Field(default=1, ge=0, le=10)

    @model_validator(mode="after")
    def _check(self) -> "Sweep":
        baselines = [a.name for a in self.arms if a.baseline]
        if len(baselines) != 1:
            raise ValueError(f"exactly one arm must have 'baseline: true', found "
                             f"{len(baselines)} ({', '.join(baselines) or 'none'})")
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {', '.join(names)}")
        for arm in self.arms:
            unknown = set(arm.models or []) - set(self.models)
            if unknown:
                raise ValueError(f"arm {arm.name} names models not in 'models': "
                                 f"{', '.join(sorted(unknown))}")
            if arm.baseline and arm.models is not None:
                raise ValueError("the baseline arm runs on every model; drop its 'models'")
        return self

    @property
    def baseline(self) -> Arm:
        return next(a for a in self.arms if a.baseline)


Loc = tuple[str | int, ...]


def catalogue_problems(sweep: Sweep, catalogue: Catalogue) -> list[tuple[Loc, str]]:
    """Where the sweep asks for something its catalogue cannot do, as (field path, problem)."""
    problems: list[tuple[Loc, str]] = []
    for backend, spec in sweep.backends.items():
        where: Loc = ("backends", backend)
        problems += _recipe_problems(catalogue, "build", spec.build, spec.params, {}, where)
        recipe = catalogue.recipes.get(spec.build)
        if recipe and not recipe.serves(backend):
            problems.append((where + ("build",), f"recipe {spec.build} has no variant for "
                             f"backend {backend}"))
    for i, arm in enumerate(sweep.arms):
        where = ("arms", i)
        problems += _recipe_problems(catalogue, "bench", arm.recipe, arm.params, arm.env, where)
        recipe = catalogue.recipes.get(arm.recipe)
        for backend in sweep.backends:
            if recipe and not recipe.serves(backend):
                problems.append((where + ("recipe",), f"recipe {arm.recipe} has no variant "
                                 f"for backend {backend}"))
    return problems


def _recipe_problems(catalogue: Catalogue, kind: str, name: str, params: dict[str, Scalar],
                     env: dict[str, str], where: Loc) -> list[tuple[Loc, str]]:
    recipe = catalogue.recipes.get(name)
    if recipe is None:
        return [(where + ("recipe" if kind != "build" else "build",),
                 f"recipe {name!r} is not in the catalogue (it has "
                 f"{', '.join(sorted(catalogue.recipes))})")]
    if recipe.kind != kind:
        return [(where, f"recipe {name} is a {recipe.kind} recipe, not a {kind} recipe")]
    return ([(where + ("params",), p) for p in param_problems(recipe, params)]
            + [(where + ("env",), p) for p in env_problems(recipe, env)])
