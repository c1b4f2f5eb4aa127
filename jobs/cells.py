"""A sweep expanded into cells: one cell is one measurement, the unit that runs and reruns.

See docs/cells.md for why the cell is (commit, backend, model, arm, repeat).
"""

import hashlib
import json
import re

from jobs.model import Scalar, Strict
from jobs.sweep import Arm, Sweep


class Step(Strict):
    """A recipe with the values a cell gives it."""

    recipe: str
    params: dict[str, Scalar] = {}
    env: dict[str, str] = {}


class Cell(Strict):
    id: str
    slug: str
    repo: str
    commit: str
    backend: str
    model: str
    arm: str
    baseline: bool
    repeat: int
    warmup: int
    build: Step
    bench: Step
    order: int

    @property
    def group(self) -> str:
        """Cells of one group are compared with each other, so they share a host."""
        return f"{self.commit}/{self.backend}/{self.model}"


def expand(sweep: Sweep) -> list[Cell]:
    """Every cell of a sweep, in the order they should run.

    Within a (commit, backend, model) group, repeat r runs the arms rotated by r, so no arm
    always runs first (or right after another one).
    """
    cells: list[Cell] = []
    for commit in sweep.target.commits:
        for backend, spec in sweep.backends.items():
            build = Step(recipe=spec.build, params=spec.params)
            for model in sweep.models:
                arms = [a for a in sweep.arms if a.models is None or model in a.models]
                for r in range(sweep.n):
                    k = r % len(arms)
                    for arm in arms[k:] + arms[:k]:
                        cells.append(_cell(sweep, commit, backend, model, arm, r + 1, build,
                                           len(cells)))
    return cells


def _cell(sweep: Sweep, commit: str, backend: str, model: str, arm: Arm, repeat: int,
          build: Step, order: int) -> Cell:
    bench = Step(recipe=arm.recipe, params=arm.params, env=arm.env)
    identity = {"repo": sweep.target.repo, "commit": commit, "backend": backend,
                "model": model, "arm": arm.name, "repeat": repeat, "warmup": sweep.warmup,
                "build": build.model_dump(), "bench": bench.model_dump()}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    slug = _slug(f"{commit[:12]}-{backend}-{model}-{arm.name}-r{repeat}")
    return Cell(id=f"{slug}-{digest}", slug=slug, repo=sweep.target.repo, commit=commit,
                backend=backend, model=model, arm=arm.name, baseline=arm.baseline,
                repeat=repeat, warmup=sweep.warmup, build=build, bench=bench, order=order)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)
