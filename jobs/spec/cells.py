"""A sweep expanded into cells: one cell is one measurement, the unit that runs and reruns.

See docs/cells.md for why the cell is (commit, backend, model, arm, repeat).
"""

import hashlib
import json
import re
from dataclasses import field
from typing import Literal

from pydantic import field_validator

from jobs.spec.routing import Route, requirements
from jobs.spec.sweep import Sweep
from jobs.strict import Lean, Scalar, assembled, dumped, slotted

PROFILE_ARM = "profile"


class Step(Lean):
    """A recipe with the values a cell gives it."""

    recipe: str
    params: dict[str, Scalar] = {}
    env: dict[str, str] = {}


# Equal steps as one object: every cell of an arm and backend names the same two, and a
# sweep file of 100,000 cells read back held 200,000 copies (170 MB).
_STEPS: dict[tuple[object, ...], Step] = {}
_STEPS_KEPT = 4096  # a worker's process lives long: bounded


def _one_of_each(step: Step) -> Step:
    # Values by their repr: True, 1 and 1.0 (and 0.0 and -0.0) are equal, but not the same.
    key = (step.recipe, *((k, repr(v)) for k, v in step.params.items()), None,
           *step.env.items())
    if len(_STEPS) >= _STEPS_KEPT:
        _STEPS.clear()
    return _STEPS.setdefault(key, step)


@slotted
class Cell:
    id: str
    slug: str
    kind: Literal["bench", "profile"] = "bench"
    repo: str
    commit: str
    backend: str
    model: str
    arm: str
    baseline: bool
    repeat: int
    warmup: int
    build: Step
    run: Step
    order: int
    # An extra repeat beyond the sweep's n: the worker runs it only while a comparison of its
    # group is still undecided (jobs/statistics/adaptive.py), else skips it.
    adaptive: bool = False
    # A cell of the A/A arm: the baseline again, whose spread is the group's noise floor.
    aa: bool = False
    # Where it may run beyond its backend (jobs/spec/routing.py): one host, capability tags.
    host: str | None = None
    requires: list[str] = field(default_factory=list)

    @field_validator("build", "run")
    @classmethod
    def _shared(cls, step: Step) -> Step:
        return _one_of_each(step)

    @property
    def route(self) -> Route:
        return Route(backend=self.backend, host=self.host, requires=self.requires)

    @property
    def group(self) -> str:
        """Cells of one group are compared with each other, so they share a host."""
        return f"{self.commit}/{self.backend}/{self.model}"


def dumped_cell(cell: Cell) -> dict[str, object]:
    """The cell as JSON data: what its envelope signs, Redis and the sweep file keep."""
    return dumped(cell, mode="json")  # type: ignore[no-any-return]


def expand(sweep: Sweep) -> list[Cell]:
    """Every cell of a sweep, in the order they should run.

    Within a (commit, backend, model) group, repeat r runs the arms rotated by r, so no arm
    always runs first (or right after another one). Adaptive repeats (n + 1 up to the cap)
    follow the regular ones in the same rotation. A group's profile cell runs last: its
    profiler never precedes a measurement.
    """
    cells: list[Cell] = []
    repeats = sweep.adaptive.max_n if sweep.adaptive else sweep.n
    aa = sweep.aa_arm.name if sweep.aa_arm else None
    # Each step once, with its JSON data for the cells' ids: a 10,000-cell sweep has a few.
    runs = {arm.name: _step(arm.recipe, arm.params, arm.env) for arm in sweep.measured_arms}
    builds = {b: _step(spec.build, spec.params, {}) for b, spec in sweep.backends.items()}
    for commit in sweep.target.commits:
        for backend in sweep.backends:
            build = builds[backend]
            for model in sweep.models:
                halves: dict[tuple[str, str], tuple[str, str]] = {}  # this group's, by arm
                arms = [a for a in sweep.measured_arms if a.models is None or model in a.models]
                for r in range(repeats):
                    k = r % len(arms)
                    for arm in arms[k:] + arms[:k]:
                        cells.append(_cell(sweep, "bench", commit, backend, model, arm.name,
                                           arm.baseline, r + 1, sweep.warmup, build,
                                           runs[arm.name], len(cells), halves,
                                           adaptive=r >= sweep.n, aa=arm.name == aa))
                profile = sweep.profiles.get(backend)
                if profile:
                    cells.append(_cell(sweep, "profile", commit, backend, model, PROFILE_ARM,
                                       False, 1, 0, build, _step(profile.recipe, profile.params,
                                                                 profile.env), len(cells),
                                       halves))
    return cells


def _step(recipe: str, params: dict[str, Scalar], env: dict[str, str]
          ) -> tuple[Step, dict[str, object]]:
    step = _one_of_each(Step(recipe=recipe, params=params, env=env))
    return step, step.model_dump()


def _cell(sweep: Sweep, kind: Literal["bench", "profile"], commit: str, backend: str,
          model: str, arm: str, baseline: bool, repeat: int, warmup: int,
          build: tuple[Step, dict[str, object]], run: tuple[Step, dict[str, object]],
          order: int, halves: dict[tuple[str, str], tuple[str, str]], adaptive: bool = False,
          aa: bool = False) -> Cell:
    spec = sweep.backends[backend]
    host, requires = spec.host, requirements(spec.requires, model)
    if (kind, arm) not in halves:  # the same for every repeat of the arm in its group
        where = {"host": host, "requires": requires}
        halves[kind, arm] = _halves({
            "repo": sweep.target.repo, "commit": commit, "backend": backend, "kind": kind,
            "model": model, "arm": arm, "warmup": warmup, "build": build[1], "run": run[1],
            # where a cell runs is part of what it measures; unset, ids stay as they were
            **{k: v for k, v in where.items() if v}})
    before, after = halves[kind, arm]
    identity = f'{before}, "repeat": {repeat}, {after}'  # json.dumps(..., sort_keys=True)'s
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    slug = _slug(f"{commit[:12]}-{backend}-{model}-{arm}-r{repeat}")
    # Made of the sweep's validated values and shared steps: not validated again.
    return assembled(Cell, id=f"{slug}-{digest}", slug=slug, kind=kind,
                     repo=sweep.target.repo, commit=commit, backend=backend, model=model,
                     arm=arm, baseline=baseline, repeat=repeat, warmup=warmup, build=build[0],
                     run=run[0], order=order, adaptive=adaptive, aa=aa, host=host,
                     requires=requires)


def _halves(identity: dict[str, object]) -> tuple[str, str]:
    """A cell's identity, all but its repeat, as `json.dumps(..., sort_keys=True)` writes it
    with the repeat among its keys: the text before the repeat, and after. Its id hashes that
    JSON; written once per arm of a group, not once per cell (28 % of expanding a sweep)."""
    before = json.dumps({k: v for k, v in identity.items() if k < "repeat"}, sort_keys=True)
    after = json.dumps({k: v for k, v in identity.items() if k > "repeat"}, sort_keys=True)
    return before[:-1], after[1:]  # both hold keys: "arm" before, "run" after


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)
