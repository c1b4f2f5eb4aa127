"""The one task: run a cell on this host and push its artifacts.

The steps around the measurement are separate pieces: the host pin (forward a cell whose
group runs elsewhere), the attempt bookkeeping, and the measurement itself.
"""

import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from jobs.attempts import AttemptResult, BuildInfo, CellState, Run
from jobs.cells import Cell
from jobs.errors import UserError
from jobs.parsers import PARSERS
from jobs.readings import BenchReading, Failure, RunOutput
from jobs.recipes import Catalogue, invocation
from workers import execute
from workers.artifacts import LocalStore
from workers.host import facts
from workers.state import Store, now
from workers.workspace import CellFailure, Workspace

log = logging.getLogger(__name__)


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


def run_cell(ctx: Context, sweep_id: str, cell: Cell) -> str:
    attempt = ctx.state.next_attempt(sweep_id, cell.id)
    ctx.state.set_state(sweep_id, cell.id, CellState(status="running", worker=ctx.name,
                                                     attempt=attempt, updated=now()))
    staging = ctx.artifacts.staging()
    try:
        result = measure(ctx, sweep_id, cell, attempt, staging)
    except Exception as error:  # a bug of ours: fail the cell, keep serving, show the trace
        log.exception("cell %s failed inside the worker", cell.id)
        result = _result(ctx, sweep_id, cell, attempt, now(), None, None, [],
                         failure=Failure(kind="setup", reason=f"internal error in worker "
                                         f"{ctx.name}: {type(error).__name__}: {error}"))
    (staging / "result.json").write_text(result.model_dump_json(indent=1))
    ctx.artifacts.publish(staging, sweep_id, cell.id, attempt)
    status = "done" if result.reading else "failed"
    reason = result.failure.reason if result.failure else None
    ctx.state.set_state(sweep_id, cell.id, CellState(status=status, worker=ctx.name,
                                                     attempt=attempt, reason=reason,
                                                     updated=now()))
    return status


def measure(ctx: Context, sweep_id: str, cell: Cell, attempt: int,
            staging: Path) -> AttemptResult:
    started, commit, build, runs = now(), None, None, []
    try:
        if cell.backend != ctx.backend:
            raise UserError(f"cell for backend {cell.backend} reached worker {ctx.name}, "
                            f"which serves {ctx.backend}")
        where = f"the catalogue of worker {ctx.name}"
        bench = ctx.catalogue.get(cell.bench.recipe, where)
        builder = ctx.catalogue.get(cell.build.recipe, where)
        commit, tree = ctx.workspace.checkout(cell.repo, cell.commit)
        out_dir = ctx.workspace.build_dir(cell.repo, commit, cell.backend, cell.build.recipe)
        values = _builtins(ctx, cell, commit, tree, out_dir / "out", staging / "out")
        build_call = invocation(builder, cell.backend, cell.build.params, {}, values)
        built = ctx.workspace.build(out_dir, tree, cell.build.recipe, build_call, sweep_id)
        build = built.info
        if built.run:
            runs.append(_keep_build_logs(built.run, built.logs, staging))
        if not build.ok:
            raise CellFailure(Failure(kind="build", reason=build.reason or "build failed"))
        call = invocation(bench, cell.backend, cell.bench.params, cell.bench.env, values)
        parse = PARSERS[bench.parser or ""]
        for i in range(cell.warmup):
            run = _run(f"warmup-{i + 1}", "warmup", call, tree, staging)
            runs.append(run)
            _raise_if_failed(parse(_output(run, staging, call.timeout_s)), "warm-up run")
        run = _run("measure", "measure", call, tree, staging)
        runs.append(run)
        parsed = parse(_output(run, staging, call.timeout_s))
        (staging / "parsed.json").write_text(parsed.model_dump_json(indent=1))
        _raise_if_failed(parsed, "measured run")
        assert isinstance(parsed, BenchReading)
        return _result(ctx, sweep_id, cell, attempt, started, commit, build, runs, reading=parsed)
    except CellFailure as failed:
        failure = failed.failure
    except UserError as error:
        failure = Failure(kind="setup", reason=str(error))
    return _result(ctx, sweep_id, cell, attempt, started, commit, build, runs, failure=failure)


def _builtins(ctx: Context, cell: Cell, commit: str, tree: Path, build: Path,
              out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    models = ctx.models_dir.resolve()
    return {"tree": str(tree), "build": str(build), "model": cell.model,
            "model_dir": str(models / cell.model), "models_dir": str(models),
            "python": sys.executable, "backend": cell.backend, "out": str(out), "commit": commit}


def _run(label: str, role: str, call: object, tree: Path, staging: Path) -> Run:
    files = execute.Files(staging / f"{label}.stdout.txt", staging / f"{label}.stderr.txt")
    return execute.run(role, call, tree, files, staging)  # type: ignore[arg-type]


def _output(run: Run, staging: Path, timeout_s: float) -> RunOutput:
    return RunOutput(stdout=(staging / run.stdout).read_text(errors="replace"),
                     stderr=(staging / run.stderr).read_text(errors="replace"),
                     exit_code=run.exit_code, timed_out=run.timed_out, timeout_s=timeout_s)


def _raise_if_failed(parsed: BenchReading | Failure, what: str) -> None:
    if isinstance(parsed, Failure):
        raise CellFailure(parsed.model_copy(update={"reason": f"{what}: {parsed.reason}"}))


def _keep_build_logs(run: Run, logs: Path, staging: Path) -> Run:
    shutil.copytree(logs, staging / "build")
    return run.model_copy(update={"stdout": f"build/{Path(run.stdout).name}",
                                  "stderr": f"build/{Path(run.stderr).name}"})


def _result(ctx: Context, sweep_id: str, cell: Cell, attempt: int, started: str,
            commit: str | None, build: BuildInfo | None, runs: list[Run],
            reading: BenchReading | None = None, failure: Failure | None = None
            ) -> AttemptResult:
    return AttemptResult(sweep_id=sweep_id, cell_id=cell.id, attempt=attempt, worker=ctx.name,
                         host=facts(), requested_commit=cell.commit, commit=commit,
                         started=started, ended=now(), build=build, runs=runs,
                         reading=reading, failure=failure)
