"""A cell's plan: every command it will run, resolved once from its recipes after checkout.

The recipes (jobs/spec/recipes.py) are read here and nowhere else in a cell's walk: the
build's steps, the flag probe, the warm-ups and the measured run (or a profile's steps), each
with its exact argv, env and timeout. A recipe the inputs do not fit fails the cell here,
before anything is built.
"""

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jobs.record.validity import asked_tokens
from jobs.spec.cells import Cell
from jobs.spec.recipes import Catalogue, Invocation, flag_probe, invocation, invocations
from workers.execute import Role


@dataclass(frozen=True)
class Step:
    """One command of the cell: its label (log names), role, and the step's own name."""

    label: str
    role: Role
    call: Invocation
    name: str


@dataclass(frozen=True)
class Checkout:
    """Where the cell's commit is checked out, and what its tree says about itself."""

    commit: str  # the full sha the cell runs at
    tree: Path
    target: dict[str, str]  # provenance (the MLX pin, toolchains), for the record
    build_dir: Path  # {build}'s parent: this commit's build for the backend and recipe
    cache: Path  # {cache}: kept across commits


@dataclass(frozen=True)
class Plan:
    checkout: Checkout
    staging: Path  # the attempt's directory until it is pushed
    build_recipe: str
    build: tuple[tuple[str, Invocation], ...]
    probe: Invocation | None  # `--help`, when the recipe requires flags
    required_flags: tuple[str, ...]
    kind: Literal["bench", "profile"]
    runs: tuple[Step, ...]  # warm-ups then the measured run, or a profile's steps
    parser: str
    # The token counts the cell asks its recipe for, so `check` can hold the run to them.
    asked: dict[str, int]
    model_dir: Path | None  # where the checkpoint must be, when the recipe needs one
    models_dir: Path

    @property
    def out(self) -> Path:
        return self.staging / "out"


def resolve(catalogue: Catalogue, where: str, cell: Cell, checkout: Checkout, staging: Path,
            models_dir: Path) -> Plan:
    """Every command of the cell; raises UserError when a recipe does not fit its inputs."""
    recipe = catalogue.get(cell.run.recipe, where)
    builder = catalogue.get(cell.build.recipe, where)
    values = builtins(cell, checkout, staging / "out", models_dir.resolve())
    probe = flag_probe(recipe, values)
    required = tuple(recipe.requires_flags.flags) if recipe.requires_flags else ()
    return Plan(checkout=checkout, staging=staging, build_recipe=cell.build.recipe,
                build=tuple(invocations(builder, cell.backend, cell.build.params, {}, values)),
                probe=probe, required_flags=required,
                kind="profile" if cell.kind == "profile" else "bench",
                runs=_runs(catalogue, where, cell, values), parser=recipe.parser or "",
                asked={} if cell.kind == "profile" else asked_tokens(recipe, cell.run.params),
                model_dir=Path(values["model_dir"]) if recipe.needs_model else None,
                models_dir=Path(values["models_dir"]))


def _runs(catalogue: Catalogue, where: str, cell: Cell, values: dict[str, str]
          ) -> tuple[Step, ...]:
    recipe = catalogue.get(cell.run.recipe, where)
    run = cell.run
    if cell.kind == "profile":
        return tuple(Step(f"profile-{name}", "profile", call, name) for name, call in
                     invocations(recipe, cell.backend, run.params, run.env, values))
    labels = [(f"warmup-{i + 1}", "warmup") for i in range(cell.warmup)] + [("measure",
                                                                             "measure")]
    return tuple(Step(label, role, invocation(recipe, cell.backend, run.params, run.env,  # type: ignore[arg-type]
                                              {**values, "run": label}), label)
                 for label, role in labels)


def builtins(cell: Cell, checkout: Checkout, out: Path, models: Path) -> dict[str, str]:
    """The values every recipe template may name ({tree}, {build}, {out}, ...)."""
    return {"tree": str(checkout.tree), "build": str(checkout.build_dir / "out"),
            "cache": str(checkout.cache), "model": cell.model,
            "model_dir": str(models / cell.model), "models_dir": str(models),
            "python": sys.executable, "backend": cell.backend, "out": str(out),
            "commit": checkout.commit}
