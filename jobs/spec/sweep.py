"""The sweep spec: what to measure, where, at which commit, how many times."""

import re
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from jobs.profiles.phases import PhaseRules, phase_rules
from jobs.spec.recipes import Catalogue, env_problems, param_problems
from jobs.spec.routing import tag_problem
from jobs.strict import Param, Scalar, Strict
from jobs.studies.moe_decode_gap.question import Question

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _name(value: str) -> str:
    if not _NAME.fullmatch(value):  # `$` alone would let a trailing newline in
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
    params: dict[str, Param] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    baseline: bool = False
    models: list[str] | None = Field(default=None, description="run only on these models")


def _tag(value: str) -> str:
    problem = tag_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class Backend(Strict):
    build: str
    params: dict[str, Param] = Field(default_factory=dict)
    host: Name | None = Field(default=None, description="run only on this host (its "
                              "BENCHFLEET_HOST, or a worker name)")
    requires: list[Annotated[str, AfterValidator(_tag)]] = Field(
        default_factory=list, description="capability tags the worker must offer, e.g. "
        "gpu=gb10; model:{model} asks for each group's checkpoint (docs/routing.md)")


class Profile(Strict):
    """The profile cell of each model on a backend: one run of a profile recipe."""

    recipe: str
    params: dict[str, Param] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class Adaptive(Strict):
    """More repeats while a comparison is undecided, up to `max_n` per arm.

    Every extra repeat is expanded (and signed) at submit; a worker skips those no longer
    needed. See docs/statistics.md.
    """

    max_n: int = Field(ge=2, le=100, description="the most measured repeats per arm")


AA_SUFFIX = "-aa"  # the A/A arm is the baseline again under the baseline's name + this


class Sweep(Strict):
    name: Name
    issue: str | int | None = Field(default=None, description="the issue the record answers")
    target: Target
    models: list[Name] = Field(min_length=1)
    backends: dict[Name, Backend] = Field(min_length=1)
    arms: list[Arm] = Field(min_length=1)
    n: int = Field(default=3, ge=1, le=100)
    warmup: int = Field(default=1, ge=0, le=10)
    profiles: dict[str, Profile] = Field(default_factory=dict)
    phases: Annotated[PhaseRules, BeforeValidator(phase_rules)] = Field(
        default_factory=PhaseRules)
    question: Question | None = None
    adaptive: Adaptive | None = None
    aa: bool = Field(default=False, description="add an A/A arm: the baseline again")

    @model_validator(mode="after")
    def _check(self) -> "Sweep":
        baselines = [a.name for a in self.arms if a.baseline]
        if len(baselines) != 1:
            raise ValueError(f"exactly one arm must have 'baseline: true', found "
                             f"{len(baselines)} ({', '.join(baselines) or 'none'})")
        names = [a.name for a in self.arms]
        aa = self.aa_arm
        if aa and aa.name in names:
            raise ValueError(f"'aa: true' adds the A/A arm {aa.name!r}, but 'arms' already has "
                             "an arm of that name; rename it")
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {', '.join(names)}")
        for arm in self.arms:
            unknown = set(arm.models or []) - set(self.models)
            if unknown:
                raise ValueError(f"arm {arm.name} names models not in 'models': "
                                 f"{', '.join(sorted(unknown))}")
            if arm.baseline and arm.models is not None:
                raise ValueError("the baseline arm runs on every model; drop its 'models'")
        unknown_backends = set(self.profiles) - set(self.backends)
        if unknown_backends:
            raise ValueError(f"profiles name backends not in 'backends': "
                             f"{', '.join(sorted(unknown_backends))}")
        if self.adaptive and self.adaptive.max_n <= self.n:
            raise ValueError(f"adaptive.max_n ({self.adaptive.max_n}) must exceed n ({self.n}): "
                             "it is the most repeats per arm, regular ones included")
        if self.question:
            self._check_question(self.question)
        return self

    def _check_question(self, q: Question) -> None:
        arms = {a.name for a in self.arms}
        for what, name in (("candidate", q.candidate), ("fused_off", q.fused_off)):
            if name is not None and name not in arms:
                raise ValueError(f"question.{what} names arm {name!r}, which is not in 'arms'")
        named = {q.control, *q.families, *(m for group in q.not_comparable for m in group)}
        unknown = named - set(self.models)
        if unknown:
            raise ValueError(f"question names models not in 'models': "
                             f"{', '.join(sorted(unknown))}")
        if q.gather_phase not in self.phases.default:
            raise ValueError(f"question.gather_phase {q.gather_phase!r} is not a phase of "
                             "'phases' (its default rules)")

    @property
    def baseline(self) -> Arm:
        return next(a for a in self.arms if a.baseline)

    @property
    def aa_arm(self) -> Arm | None:
        """The A/A arm: the baseline's recipe, params and env under another name."""
        if not self.aa:
            return None
        base = next(a for a in self.arms if a.baseline)
        return base.model_copy(update={"name": base.name + AA_SUFFIX, "baseline": False})

    @property
    def measured_arms(self) -> list[Arm]:
        """The arms cells are made for: the spec's, then the A/A arm if asked for."""
        aa = self.aa_arm
        return [*self.arms, aa] if aa else list(self.arms)

    def family(self, model: str) -> str | None:
        """The model's MoE family, as the question names it; None takes the default rules."""
        return self.question.families.get(model) if self.question else None


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
    for backend, profile in sweep.profiles.items():
        where = ("profiles", backend)
        problems += _recipe_problems(catalogue, "profile", profile.recipe, profile.params,
                                     profile.env, where)
        recipe = catalogue.recipes.get(profile.recipe)
        if recipe and not recipe.serves(backend):
            problems.append((where + ("recipe",), f"recipe {profile.recipe} has no variant "
                             f"for backend {backend}"))
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
        return [(where + ("build" if kind == "build" else "recipe",),
                 f"recipe {name!r} is not in the catalogue (it has "
                 f"{', '.join(sorted(catalogue.recipes))})")]
    if recipe.kind != kind:
        return [(where, f"recipe {name} is a {recipe.kind} recipe, not a {kind} recipe")]
    return ([(where + ("params",), p) for p in param_problems(recipe, params)]
            + [(where + ("env",), p) for p in env_problems(recipe, env)])
