"""The one task: run a cell on this host and push its artifacts.

The steps around the measurement are separate pieces: the attempt bookkeeping (`run_cell`),
the setup every cell shares (checkout, provenance, build, checks), and the cell's own runs
(a bench cell's warm-up and measured run, or a profile cell's steps).
"""

import logging
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from jobs.attempts import AttemptResult, BuildInfo, CellState, CellStatus, Run
from jobs.cells import Cell
from jobs.errors import UserError
from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.readings import BenchReading, Failure, Parsed, ProfileInput, ProfileReading
from jobs.recipes import Catalogue, Invocation, Recipe, flag_probe, invocation, invocations
from workers import execute
from workers.fleet.artifacts import LocalStore
from workers.fleet.state import Store, now
from workers.host import facts
from workers.provenance import read_facts
from workers.workspace import CellFailure, Workspace

log = logging.getLogger(__name__)
# Text files a profile step writes under {out} that its parser may read.
_PARSER_FILES = (".dot", ".csv", ".txt", ".json")
_PARSER_FILE_LIMIT = 4 << 20


@dataclass(frozen=True)
class Context:
    """Everything a worker process needs to run cells; built once when it starts."""

    name: str
    backend: str
    models_dir: Path
    catalogue: Catalogue
    workspace: Workspace
    artifacts: LocalStore
    state: Store


@dataclass
class Attempt:
    """What one attempt has learnt so far; a failure keeps all of it."""

    cell: Cell
    staging: Path
    started: str = field(default_factory=now)
    commit: str | None = None
    build: BuildInfo | None = None
    runs: list[Run] = field(default_factory=list)
    target: dict[str, str] = field(default_factory=dict)


def run_cell(ctx: Context, sweep_id: str, cell: Cell) -> str:
    attempt = ctx.state.next_attempt(sweep_id, cell.id)
    ctx.state.set_state(sweep_id, cell.id, CellState(status="running", worker=ctx.name,
                                                     attempt=attempt, updated=now()))
    staging = ctx.artifacts.staging()
    progress = Attempt(cell, staging)
    try:
        result = _result(ctx, sweep_id, attempt, progress, *measure(ctx, sweep_id, progress))
    except Exception as error:  # a bug of ours: fail the cell, keep serving, show the trace
        log.exception("cell %s failed inside the worker", cell.id)
        failure = Failure(kind="setup", reason=f"internal error in worker {ctx.name}: "
                          f"{type(error).__name__}: {error}")
        result = _result(ctx, sweep_id, attempt, progress, None, failure)
    (staging / "result.json").write_text(result.model_dump_json(indent=1))
    ctx.artifacts.publish(staging, sweep_id, cell.id, attempt)
    status: CellStatus = "failed" if result.failure else "done"
    reason = result.failure.reason if result.failure else None
    ctx.state.set_state(sweep_id, cell.id, CellState(status=status, worker=ctx.name,
                                                     attempt=attempt, reason=reason,
                                                     updated=now()))
    return status


def measure(ctx: Context, sweep_id: str, a: Attempt
            ) -> tuple[BenchReading | ProfileReading | None, Failure | None]:
    try:
        recipe, tree, values = _prepare(ctx, sweep_id, a)
        if a.cell.kind == "profile":
            return _profile(ctx, a, recipe, tree, values), None
        return _bench(ctx, a, recipe, tree, values), None
    except CellFailure as failed:
        return None, failed.failure
    except UserError as error:
        return None, Failure(kind="setup", reason=str(error))


def _prepare(ctx: Context, sweep_id: str, a: Attempt) -> tuple[Recipe, Path, dict[str, str]]:
    """Checkout, provenance, build and the recipe's own checks: what every cell needs."""
    cell = a.cell
    if cell.backend != ctx.backend:
        raise UserError(f"cell for backend {cell.backend} reached worker {ctx.name}, which "
                        f"serves {ctx.backend}")
    where = f"the catalogue of worker {ctx.name}"
    recipe = ctx.catalogue.get(cell.run.recipe, where)
    builder = ctx.catalogue.get(cell.build.recipe, where)
    a.commit, tree = ctx.workspace.checkout(cell.repo, cell.commit)
    a.target = read_facts(ctx.catalogue.provenance, tree)
    build_dir = ctx.workspace.build_dir(cell.repo, a.commit, cell.backend, cell.build.recipe)
    cache = ctx.workspace.cache_dir(cell.repo, cell.backend)
    values = _builtins(ctx, cell, a.commit, tree, build_dir / "out", cache, a.staging / "out")
    calls = invocations(builder, cell.backend, cell.build.params, {}, values)
    built = ctx.workspace.build(build_dir, cache, tree, cell.build.recipe, calls, sweep_id)
    a.build = built.info
    a.runs += _keep_build_logs(built.runs, built.logs, a.staging)
    if not built.info.ok:
        raise CellFailure(Failure(kind="build", reason=built.info.reason or "build failed"))
    if recipe.needs_model and not Path(values["model_dir"]).is_dir():
        raise CellFailure(Failure(kind="setup", reason=f"checkpoint {cell.model} not in "
                                  f"MODELS_DIR ({values['models_dir']}) on host "
                                  f"{facts().hostname}"))
    _check_flags(recipe, values, tree, a)
    return recipe, tree, values


def _bench(ctx: Context, a: Attempt, recipe: Recipe, tree: Path,
           values: dict[str, str]) -> BenchReading:
    for i in range(a.cell.warmup):
        parsed = _bench_run(a, recipe, tree, values, f"warmup-{i + 1}", "warmup")
        _raise_if_failed(parsed, "warm-up run")
    parsed = _bench_run(a, recipe, tree, values, "measure", "measure")
    (a.staging / "parsed.json").write_text(parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "measured run")
    assert isinstance(parsed, BenchReading)
    return parsed


def _bench_run(a: Attempt, recipe: Recipe, tree: Path, values: dict[str, str], label: str,
               role: execute.Role) -> Parsed:
    """One bench run, parsed with the text files it created or changed under {out}."""
    cell = a.cell
    call = invocation(recipe, cell.backend, cell.run.params, cell.run.env,
                      {**values, "run": label})
    out = a.staging / "out"
    before = _stamps(out)
    run = _run(a, label, role, call, tree)
    after = _stamps(out)
    written = {k: v for k, v in _text_files(out).items() if after.get(k) != before.get(k)}
    output = execute.output(run, a.staging, call.timeout_s)
    return PARSERS[recipe.parser or ""](output.model_copy(update={"files": written}))


def _profile(ctx: Context, a: Attempt, recipe: Recipe, tree: Path,
             values: dict[str, str]) -> ProfileReading:
    cell = a.cell
    outputs = {}
    for name, call in invocations(recipe, cell.backend, cell.run.params, cell.run.env, values):
        run = _run(a, f"profile-{name}", "profile", call, tree)
        outputs[name] = execute.output(run, a.staging, call.timeout_s)
        if run.exit_code != 0:
            break  # later steps read what this one should have written
    files = _text_files(a.staging / "out")
    parsed = PROFILE_PARSERS[recipe.parser or ""](ProfileInput(steps=outputs, files=files))
    (a.staging / "parsed.json").write_text(parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "profile")
    assert isinstance(parsed, ProfileReading)
    return parsed


def _check_flags(recipe: Recipe, values: dict[str, str], tree: Path, a: Attempt) -> None:
    call = flag_probe(recipe, values)
    if call is None or recipe.requires_flags is None:
        return
    run = _run(a, "probe-help", "probe", call, tree)
    output = execute.output(run, a.staging, call.timeout_s)
    missing = [f for f in recipe.requires_flags.flags if f not in output.stdout + output.stderr]
    if missing:
        raise CellFailure(Failure(kind="setup", reason=f"{Path(call.argv[0]).name} at "
                                  f"{(a.commit or '')[:12]} lacks {', '.join(missing)} (an older "
                                  "commit?); the recipe needs them"))


def _builtins(ctx: Context, cell: Cell, commit: str, tree: Path, build: Path, cache: Path,
              out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    models = ctx.models_dir.resolve()
    return {"tree": str(tree), "build": str(build), "cache": str(cache), "model": cell.model,
            "model_dir": str(models / cell.model), "models_dir": str(models),
            "python": sys.executable, "backend": cell.backend, "out": str(out), "commit": commit}


def _text_files(out: Path) -> dict[str, str]:
    """Text files under {out} a parser may read, by path relative to {out}."""
    return {str(p.relative_to(out)): p.read_text(errors="replace") for p in sorted(out.rglob("*"))
            if p.is_file() and p.suffix in _PARSER_FILES and p.stat().st_size < _PARSER_FILE_LIMIT}


def _stamps(out: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(out)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in out.rglob("*") if p.is_file()}


def _cwd(call: Invocation, tree: Path, staging: Path) -> Path:
    """Where a run goes: the worktree, or the recipe's `cwd`, made when it lies under {out}."""
    if call.cwd is None:
        return tree
    cwd = Path(call.cwd)
    if cwd.resolve().is_relative_to((staging / "out").resolve()):
        cwd.mkdir(parents=True, exist_ok=True)
    if not cwd.is_dir():
        raise CellFailure(Failure(kind="setup", reason=f"the recipe's cwd {cwd} is not a "
                                  "directory; point it at {tree} or under {out}"))
    return cwd


def _run(a: Attempt, label: str, role: execute.Role, call: Invocation, tree: Path) -> Run:
    files = execute.Files(a.staging / f"{label}.stdout.txt", a.staging / f"{label}.stderr.txt")
    run = execute.run(role, call, _cwd(call, tree, a.staging), files, a.staging)
    a.runs.append(run)
    return run


def _raise_if_failed(parsed: object, what: str) -> None:
    if isinstance(parsed, Failure):
        raise CellFailure(parsed.model_copy(update={"reason": f"{what}: {parsed.reason}"}))


def _keep_build_logs(runs: list[Run], logs: Path, staging: Path) -> list[Run]:
    if not runs:
        return []
    shutil.copytree(logs, staging / "build")
    return [r.model_copy(update={"stdout": f"build/{Path(r.stdout).name}",
                                 "stderr": f"build/{Path(r.stderr).name}"}) for r in runs]


def _result(ctx: Context, sweep_id: str, attempt: int, a: Attempt,
            reading: BenchReading | ProfileReading | None, failure: Failure | None
            ) -> AttemptResult:
    return AttemptResult(
        sweep_id=sweep_id, cell_id=a.cell.id, attempt=attempt, worker=ctx.name, host=facts(),
        requested_commit=a.cell.commit, commit=a.commit, started=a.started, ended=now(),
        build=a.build, runs=a.runs, target=a.target,
        reading=reading if isinstance(reading, BenchReading) else None,
        profile=reading if isinstance(reading, ProfileReading) else None, failure=failure)
