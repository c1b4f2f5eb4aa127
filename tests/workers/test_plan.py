"""A cell's plan: every command resolved once from its recipes after checkout; the task and the
hooks never read a recipe themselves."""

import ast
from pathlib import Path

import pytest

from jobs.errors import UserError
from jobs.spec.cells import Cell, expand
from jobs.spec.recipes import Catalogue
from jobs.spec.specfile import load
from jobs.spec.sweep import Sweep
from jobs.strict import replaced
from tests.support.cells import SHA, SPEC
from workers.plan import Checkout, resolve

ROOT = Path(__file__).parents[2]
CHECKOUT = Checkout(SHA, Path("/w/trees/t"), {"mlx": "0.31"}, Path("/w/builds/t"),
                    Path("/w/caches/t"))


def _cell(spec: str, **change: object) -> Cell:
    return replaced(expand(load(Sweep, spec, "plan.yaml")[0])[0], **change)


def test_a_bench_cell_plans_its_build_warm_ups_and_measured_run(catalogue: Catalogue) -> None:
    cell = _cell(SPEC.replace("n: 2", "n: 2\nwarmup: 2"))
    plan = resolve(catalogue, "here", cell, CHECKOUT, Path("/w/stage"), Path("/w/models"))
    assert [(s.label, s.role) for s in plan.runs] == [("warmup-1", "warmup"),
                                                      ("warmup-2", "warmup"),
                                                      ("measure", "measure")]
    assert [name for name, _ in plan.build] == ["run"]
    assert "/w/builds/t/out" in plan.build[0][1].argv
    assert plan.kind == "bench" and plan.parser == "mlxcel-bench-decode"  # its output is mlxcel's
    assert plan.out == Path("/w/stage/out") and plan.checkout is CHECKOUT


def test_a_recipe_that_requires_flags_plans_its_probe(catalogue: Catalogue) -> None:
    cell = _cell(SPEC, run=_cell(SPEC).run.model_copy(
        update={"recipe": "mlxcel-bench-decode"}))
    plan = resolve(catalogue, "here", cell, CHECKOUT, Path("/w/stage"), Path("/w/models"))
    assert plan.probe is not None and plan.probe.argv == ["/w/builds/t/out/mlxcel-bench-decode",
                                                          "--help"]
    assert plan.required_flags == ("--prompt-tokens", "--ignore-eos")
    assert plan.model_dir == Path("/w/models/tinymoe-a3")
    assert plan.runs[-1].call.argv[0] == "/w/builds/t/out/mlxcel-bench-decode"


def test_a_recipe_without_the_cells_backend_fails_before_anything_runs(
        catalogue: Catalogue) -> None:
    cell = _cell(SPEC, run=_cell(SPEC).run.model_copy(
        update={"recipe": "mlxcel-nsys-kernels", "params": {}}), kind="profile")
    with pytest.raises(UserError, match="no variant for backend 'cpu'"):
        resolve(catalogue, "here", cell, CHECKOUT, Path("/w/stage"), Path("/w/models"))


def test_only_the_plan_reads_recipes_in_a_cells_walk() -> None:
    readers = {"invocation", "invocations", "flag_probe"}
    found = []
    for path in [ROOT / "workers" / "task.py", *(ROOT / "workers" / "hooks").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "jobs.spec.recipes":
                found += [f"{path.name}: {a.name}" for a in node.names if a.name in readers]
    assert found == []
