"""The recipe catalogue: named command templates per backend, with typed parameters.

A worker only runs recipes from its own catalogue: the queue carries a recipe's name and
parameter values, never a command line.
"""

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import Field, model_validator

from jobs.errors import UserError
from jobs.spec.confine import inside
from jobs.spec.templates import fill, placeholders
from jobs.strict import Scalar, Strict

# Placeholders every command may use; the worker fills them in for each run.
BUILTINS = {
    "tree": "the target's worktree at the cell's commit",
    "build": "the build output directory of (commit, backend)",
    "cache": "a directory per (target, backend) kept across commits (cargo's target dir)",
    "model": "the model's name",
    "model_dir": "MODELS_DIR/<model> on the worker's host",
    "models_dir": "the worker's MODELS_DIR",
    "python": "the worker's Python interpreter",
    "backend": "the backend name",
    "out": "a scratch directory kept as the run's artifacts",
    "commit": "the resolved 40-hex commit",
    "run": "the run's label within the attempt (warmup-1, measure, or the step's name)",
}
# Where a command runs unless its recipe says otherwise.
DEFAULT_CWD = "{tree}"

Kind = Literal["build", "bench", "profile"]
ParamType = Literal["int", "float", "str", "bool"]
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
}


class Param(Strict):
    type: ParamType
    default: Scalar | None = None
    help: str = ""

    def accepts(self, value: Scalar) -> bool:
        # bool is an int in Python; a typed parameter must not take one for the other.
        if isinstance(value, bool) and self.type != "bool":
            return False
        return isinstance(value, _PYTHON_TYPES[self.type])


class Optional_(Strict):
    """Arguments present only when a bool parameter is true (e.g. `--ignore-eos`)."""

    when: str
    args: list[str]


Arg = str | Optional_


class RecipeStep(Strict):
    """One named command of a recipe that runs several (a build, a two-run profile)."""

    name: str
    command: list[Arg] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)


class Variant(Strict):
    """What one backend changes in a recipe: its command or steps, extra env, or both."""

    command: list[Arg] | None = None
    steps: list[RecipeStep] | None = None
    env: dict[str, str] = Field(default_factory=dict)


class FlagProbe(Strict):
    """Flags the program must list in its help; older mlxcel commits lack some."""

    command: list[str] = Field(min_length=1)
    flags: list[str] = Field(min_length=1)


class RetryPolicy(Strict):
    """Which failures of a command are worth trying again, and how often.

    Deterministic by default: a build error, an `Error:` exit, a timeout (124) or an
    out-of-memory kill reproduces, and retrying it wastes hours. A recipe marks what is
    transient: exit codes, output patterns, and at most one retry after an OOM.
    """

    tries: int = Field(default=1, ge=1, le=10)
    transient_exits: list[int] = Field(default_factory=list)
    transient_patterns: list[str] = Field(default_factory=list)
    oom_retries: int = Field(default=0, ge=0, le=1)
    backoff_s: float = Field(default=2.0, gt=0)
    max_backoff_s: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _check(self) -> "RetryPolicy":
        if 124 in self.transient_exits:
            raise ValueError("exit 124 is a timeout, which is deterministic; it cannot be "
                             "transient")
        for pattern in self.transient_patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"transient pattern {pattern!r} is not a regular expression "
                                 f"({error})") from None
        return self


class Recipe(Strict):
    kind: Kind
    command: list[Arg] | None = None
    steps: list[RecipeStep] = Field(default_factory=list)
    parser: str | None = None
    timeout_s: float = Field(default=900, gt=0)
    env: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Param] = Field(default_factory=dict)
    allow_env: list[str] = Field(default_factory=list)
    # Env names (globs) an arm may set only to a path, confined to the cell's {out}.
    path_env: list[str] = Field(default_factory=list)
    # The worker's own variables a command may see; secrets are removed otherwise.
    pass_env: list[str] = Field(default_factory=list)
    backends: dict[str, Variant] = Field(default_factory=dict)
    needs_model: bool = False
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    requires_flags: FlagProbe | None = None
    cwd: str = Field(default=DEFAULT_CWD, description=(
        "where the command runs (a template; e.g. {out}/{run}, created when under {out})"))
    help: str = ""

    @model_validator(mode="after")
    def _check(self) -> "Recipe":
        if (self.command is None) == (not self.steps):
            raise ValueError("a recipe has either a command or steps, not both or neither")
        names = [step.name for step in self.steps]
        if len(set(names)) != len(names):
            raise ValueError(f"step names must be unique: {', '.join(names)}")
        if self.kind == "bench" and self.steps:
            raise ValueError("a bench recipe is one command, so its parser reads one run")
        if self.kind == "build" and self.cwd != DEFAULT_CWD:
            raise ValueError("a build runs in the worktree; cwd is for bench and profile recipes")
        if self.kind != "build" and not self.parser:
            raise ValueError(f"a {self.kind} recipe needs a parser")
        for name, param in self.params.items():
            if param.default is not None and not param.accepts(param.default):
                raise ValueError(f"default of parameter {name} is not a {param.type}")
        known = set(self.params) | set(BUILTINS)
        for template in self._templates():
            for name in placeholders(template):
                if name not in known:
                    raise ValueError(f"{{{name}}} is neither a parameter nor a built-in")
        for arg in self._conditionals():
            if arg.when not in self.params or self.params[arg.when].type != "bool":
                raise ValueError(f"'when: {arg.when}' must name a bool parameter")
        return self

    def _commands(self) -> list[list[Arg]]:
        variants = list(self.backends.values())
        commands = [self.command] + [v.command for v in variants]
        steps = self.steps + [s for v in variants for s in v.steps or []]
        return [c for c in commands if c] + [s.command for s in steps]

    def _templates(self) -> list[str]:
        args = [a for cmd in self._commands() for a in cmd]
        texts = [a for a in args if isinstance(a, str)]
        texts += [t for a in args if isinstance(a, Optional_) for t in a.args]
        steps = self.steps + [s for v in self.backends.values() for s in v.steps or []]
        envs = [self.env] + [v.env for v in self.backends.values()] + [s.env for s in steps]
        probe = self.requires_flags.command if self.requires_flags else []
        return texts + probe + [self.cwd] + [value for env in envs for value in env.values()]

    def _conditionals(self) -> list[Optional_]:
        return [a for cmd in self._commands() for a in cmd if isinstance(a, Optional_)]

    def serves(self, backend: str) -> bool:
        """A recipe with per-backend variants serves only those backends."""
        return not self.backends or backend in self.backends

    def env_allowed(self, name: str) -> bool:
        return any(fnmatchcase(name, pattern) for pattern in self.allow_env)

    def path_valued(self, name: str) -> bool:
        return any(fnmatchcase(name, pattern) for pattern in self.path_env)


class Probe(Strict):
    """A fact read from the target tree: a command's output, else a file's regex match."""

    command: list[str] | None = None
    file: str | None = None
    pattern: str | None = None


class Catalogue(Strict):
    recipes: dict[str, Recipe]
    provenance: dict[str, list[Probe]] = Field(default_factory=dict)

    def get(self, name: str, host: str = "this catalogue") -> Recipe:
        if name not in self.recipes:
            raise UserError(f"recipe {name!r} is not in {host}; add it or pick one of "
                            f"{', '.join(sorted(self.recipes))}")
        return self.recipes[name]


def param_problems(recipe: Recipe, given: Mapping[str, Scalar]) -> list[str]:
    """Why these parameter values do not fit the recipe (empty when they do)."""
    problems = [f"unknown parameter {name!r}; the recipe takes "
                f"{', '.join(sorted(recipe.params)) or 'none'}"
                for name in given if name not in recipe.params]
    for name, param in recipe.params.items():
        if name in given and not param.accepts(given[name]):
            problems.append(f"parameter {name!r} must be a {param.type}, got {given[name]!r}")
        elif name not in given and param.default is None:
            problems.append(f"parameter {name!r} is required")
    return problems


def env_problems(recipe: Recipe, env: Mapping[str, str]) -> list[str]:
    problems = [f"env {name} may not be overridden; the recipe allows "
                f"{', '.join(recipe.allow_env) or 'no overrides'}"
                for name in env if not recipe.env_allowed(name)]
    # Any directory stands for {out} here: a value stays inside one only if it is relative
    # and never climbs out, wherever {out} turns out to be.
    return problems + [_path_problem(name, value) for name, value in env.items()
                       if recipe.path_valued(name)
                       and (value.startswith("/") or inside(value, "/out") is None)]


def _path_problem(name: str, value: str) -> str:
    return (f"env {name}={value[:120]!r} names a path outside the cell's {{out}}; give a path "
            "relative to it, without '..' (e.g. decode.dot)")


class Invocation(Strict):
    """A recipe made concrete for one run: the exact argv, the env it sets, where it runs."""

    argv: list[str]
    env: dict[str, str]
    timeout_s: float
    pass_env: list[str] = []
    retry: RetryPolicy = RetryPolicy()
    cwd: str | None = None  # None: the worktree


def invocations(recipe: Recipe, backend: str, given: Mapping[str, Scalar],
                env_overrides: Mapping[str, str], builtins: Mapping[str, str]
                ) -> list[tuple[str, Invocation]]:
    """Every command of a recipe for one backend, named; one command is named `run`.

    `{run}` is the step's name unless the caller's builtins say otherwise.
    """
    variant = recipe.backends.get(backend, Variant())
    steps = variant.steps or recipe.steps
    if not steps:
        return [("run", invocation(recipe, backend, given, env_overrides,
                                   {"run": "run", **builtins}))]
    return [(step.name, invocation(recipe, backend, given, env_overrides,
                                   {"run": step.name, **builtins}, step)) for step in steps]


def invocation(recipe: Recipe, backend: str, given: Mapping[str, Scalar],
               env_overrides: Mapping[str, str], builtins: Mapping[str, str],
               step: RecipeStep | None = None) -> Invocation:
    """Fill a recipe's templates for one backend; raises UserError when the inputs don't fit."""
    problems = param_problems(recipe, given) + env_problems(recipe, env_overrides)
    if not recipe.serves(backend):
        problems.append(f"the recipe has no variant for backend {backend!r}")
    if problems:
        raise UserError("; ".join(problems))
    values: dict[str, Scalar] = {n: p.default for n, p in recipe.params.items()
                                 if p.default is not None}
    values.update(given)
    values.update(builtins)
    variant = recipe.backends.get(backend, Variant())
    command = step.command if step else variant.command or recipe.command or []
    argv: list[str] = []
    for arg in command:
        if isinstance(arg, str):
            argv.append(fill(arg, values))
        elif values[arg.when]:
            argv.extend(fill(a, values) for a in arg.args)
    env = {**recipe.env, **variant.env, **(step.env if step else {})}
    env = {k: fill(v, values) for k, v in env.items()}
    env.update(env_overrides)
    env = _confine_paths(recipe, env, str(builtins.get("out", "")))
    cwd = fill(recipe.cwd, values) if recipe.cwd != DEFAULT_CWD else None
    return Invocation(argv=argv, env=env, timeout_s=recipe.timeout_s, pass_env=recipe.pass_env,
                      retry=recipe.retry, cwd=cwd)


def _confine_paths(recipe: Recipe, env: dict[str, str], out: str) -> dict[str, str]:
    """`path_env` values made absolute under {out}; one that would leave it is refused."""
    confined = dict(env)
    for name, value in env.items():
        if not recipe.path_valued(name):
            continue
        path = inside(value, out) if out else None
        if path is None:
            raise UserError(_path_problem(name, value))
        confined[name] = path
    return confined


def flag_probe(recipe: Recipe, builtins: Mapping[str, str]) -> Invocation | None:
    """The `--help` call that shows whether the built program has the flags the recipe uses."""
    if recipe.requires_flags is None:
        return None
    values: dict[str, Scalar] = {"run": "probe-help", **builtins}
    return Invocation(argv=[fill(a, values) for a in recipe.requires_flags.command], env={},
                      timeout_s=60)
