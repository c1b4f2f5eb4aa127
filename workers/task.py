"""The task: run one group's cells on this host and push their artifacts.

This file is the measurement itself — checkout, build, the cell's runs, parse, push. What
happens around it (signature, lease, cancel, retries, host lease, idle gate) are the hooks in
workers/hooks/, which the worker chains around every cell and every command.
"""

import hashlib
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from jobs.errors import UserError
from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.parsers.readings import BenchReading, Failure, Parsed, ProfileInput, ProfileReading
from jobs.record.attempts import AttemptResult, Run
from jobs.spec.recipes import Catalogue, Invocation, Recipe, flag_probe, invocation, invocations
from workers import execute
from workers.hooks import Chain, Dropped, Refused, Rejected
from workers.host_facts import facts
from workers.in_flight import Group, Job
from workers.offer import Offering
from workers.provenance import read_facts
from workers.shared.clock import now
from workers.shared.leases import IDLE_TTL_S, Lease, LeaseLost
from workers.shared.messages import Signed
from workers.shared.state import Store
from workers.shared.stores import ArtifactExists, ArtifactStore
from workers.workspace import CellFailure, Workspace

log = logging.getLogger(__name__)
# Text files a step writes under {out} that its parser may read.
_PARSER_FILES = (".dot", ".csv", ".txt", ".json")
# A kernel trace (cuda_gpu_trace) lists every launch: about 6 MB for 96 tokens on the H200.
_PARSER_FILE_LIMIT = 64 << 20


@dataclass(frozen=True)
class Context:
    """Everything a worker process needs to run cells; built once when it starts."""

    name: str
    backend: str
    models_dir: Path
    catalogue: Catalogue
    workspace: Workspace
    artifacts: ArtifactStore
    state: Store
    lease: Lease
    hooks: Chain
    max_attempts: int = 3
    lost_after_s: float = 30.0
    offering: Offering | None = None  # what it offers the fleet (workers/offer.py)


def run_group(ctx: Context, sweep_id: str, task_id: str, items: list[list[str]]) -> str:
    """Run a message's cells in order; returns a one-line summary for Celery's log."""
    group = Group(sweep_id, task_id, [Signed(*item[:2]) for item in items])
    ctx.lease.hold(sweep_id, [s.claimed_cell() for s in group.items], task_id)
    outcomes = []
    try:
        for signed in group.items:
            outcomes.append(run_one(ctx, Job(group, signed)))
    except LeaseLost as lost:
        log.error("%s; abandoning the rest of this message", lost)
        return f"abandoned: {lost}"
    ctx.lease.release()
    ctx.lease.renew(IDLE_TTL_S)
    return ", ".join(outcomes)


def run_one(ctx: Context, job: Job) -> str:
    rejected = None
    try:
        ctx.hooks.before_cell(job)
    except (Refused, Dropped) as why:
        log.info("cell not run: %s", why)
        return f"not run ({why})"
    except Rejected as why:
        rejected = why.failure  # taken, and ends failed without running anything
    except LeaseLost:
        raise
    except Exception as error:  # a hook's own failure: a cell already taken still ends
        log.exception("before cell %s", job.signed.envelope[:80])
        if job.attempt is None:
            return f"not run ({type(error).__name__}: {error})"
        failure = Failure(kind="setup", reason=f"worker {ctx.name}: {type(error).__name__}: "
                          f"{error}")
        result = _result(ctx, job, None, failure)
        ctx.hooks.on_failure(job, failure)
        ctx.hooks.after_cell(job, result)
        return "failed"
    try:
        job.staging = ctx.artifacts.staging()
    except OSError as error:
        failure = Failure(kind="store", reason=f"cannot stage the attempt's artifacts on "
                          f"{ctx.name}: {error.strerror or error}")
        result = _result(ctx, job, None, failure)
    else:
        measured = (None, rejected) if rejected else measure(ctx, job)
        result = _push(ctx, job, _result(ctx, job, *measured))
    if result.failure:
        ctx.hooks.on_failure(job, result.failure)
    ctx.hooks.after_cell(job, result)
    return "failed" if result.failure else "done"


def measure(ctx: Context, job: Job) -> tuple[BenchReading | ProfileReading | None,
                                             Failure | None]:
    try:
        recipe, tree, values = _prepare(ctx, job)
        if job.cell.kind == "profile":
            return _profile(ctx, job, recipe, tree, values), None
        return _bench(ctx, job, recipe, tree, values), None
    except CellFailure as failed:
        return None, failed.failure
    except execute.Cancelled as cancelled:
        return None, Failure(kind="cancelled", reason=str(cancelled))
    except UserError as error:
        return None, Failure(kind="setup", reason=str(error))
    except LeaseLost:
        raise
    except Exception as error:  # a bug of ours, or the host (a full disk): end the cell, say why
        log.exception("cell %s failed inside the worker", job.cell.id)
        return None, Failure(kind="setup", reason=f"worker {ctx.name}: {type(error).__name__}: "
                             f"{error}")


def _prepare(ctx: Context, job: Job) -> tuple[Recipe, Path, dict[str, str]]:
    """Checkout, provenance, build and the recipe's own checks: what every cell needs."""
    cell = job.cell
    if cell.backend != ctx.backend:
        raise UserError(f"cell for backend {cell.backend} reached worker {ctx.name}, which "
                        f"serves {ctx.backend}")
    where = f"the catalogue of worker {ctx.name}"
    recipe = ctx.catalogue.get(cell.run.recipe, where)
    builder = ctx.catalogue.get(cell.build.recipe, where)
    job.commit, tree = ctx.workspace.checkout(cell.repo, cell.commit)
    job.target = ctx.workspace.facts(tree, lambda: read_facts(ctx.catalogue.provenance, tree))
    build_dir = ctx.workspace.build_dir(cell.repo, job.commit, cell.backend, cell.build.recipe)
    cache = ctx.workspace.cache_dir(cell.repo, cell.backend)
    assert job.staging is not None
    values = _builtins(ctx, job, tree, build_dir / "out", cache, job.staging / "out")
    calls = invocations(builder, cell.backend, cell.build.params, {}, values)
    envelope = job.envelope
    assert envelope is not None
    scope = f"{job.sweep_id}#{envelope.generation}"
    built = ctx.workspace.build(build_dir, cache, tree, cell.build.recipe, calls, scope,
                                envelope.rebuild, lambda c: _command(ctx, job, c))
    job.build = built.info
    job.runs += _keep_build_logs(built.runs, built.logs, job.staging, built.info.cached)
    if not built.info.ok:
        raise CellFailure(Failure(kind="build", reason=built.info.reason or "build failed"))
    if recipe.needs_model and not Path(values["model_dir"]).is_dir():
        raise CellFailure(Failure(kind="setup", reason=f"checkpoint {cell.model} not in "
                                  f"MODELS_DIR ({values['models_dir']}) on host "
                                  f"{facts().hostname}"))
    _check_flags(ctx, job, recipe, values, tree)
    return recipe, tree, values


def _bench(ctx: Context, job: Job, recipe: Recipe, tree: Path,
           values: dict[str, str]) -> BenchReading:
    cell = job.cell
    for i in range(cell.warmup):
        parsed = _bench_run(ctx, job, recipe, tree, values, f"warmup-{i + 1}", "warmup")
        _raise_if_failed(parsed, "warm-up run")
    parsed = _bench_run(ctx, job, recipe, tree, values, "measure", "measure")
    _write(job, "parsed.json", parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "measured run")
    assert isinstance(parsed, BenchReading)
    return parsed


def _bench_run(ctx: Context, job: Job, recipe: Recipe, tree: Path, values: dict[str, str],
               label: str, role: execute.Role) -> Parsed:
    """One bench run, parsed with the text files it created or changed under {out}."""
    cell = job.cell
    assert job.staging is not None
    call = invocation(recipe, cell.backend, cell.run.params, cell.run.env,
                      {**values, "run": label})
    out = job.staging / "out"
    before = _stamps(out)
    run = _run(ctx, job, label, role, call, tree)
    written = {k: v for k, v in _text_files(out).items() if _stamps(out).get(k) != before.get(k)}
    output = _output(job, run, call)
    return PARSERS[recipe.parser or ""](output.model_copy(update={"files": written}))


def _profile(ctx: Context, job: Job, recipe: Recipe, tree: Path,
             values: dict[str, str]) -> ProfileReading:
    cell = job.cell
    outputs = {}
    for name, call in invocations(recipe, cell.backend, cell.run.params, cell.run.env, values):
        run = _run(ctx, job, f"profile-{name}", "profile", call, tree)
        outputs[name] = _output(job, run, call)
        if run.exit_code != 0:
            break  # later steps read what this one should have written
    assert job.staging is not None
    files = _text_files(job.staging / "out")
    parsed = PROFILE_PARSERS[recipe.parser or ""](ProfileInput(steps=outputs, files=files))
    _write(job, "parsed.json", parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "profile")
    assert isinstance(parsed, ProfileReading)
    return parsed


def _check_flags(ctx: Context, job: Job, recipe: Recipe, values: dict[str, str],
                 tree: Path) -> None:
    call = flag_probe(recipe, values)
    if call is None or recipe.requires_flags is None:
        return
    # A build's `--help` never changes: ask it once per build and probe, not once per cell.
    known = Path(values["build"]).parent / "flags" / f"{_digest(call.argv)}.json"
    if known.exists():
        missing = json.loads(known.read_text())["missing"]
    else:
        run = _run(ctx, job, "probe-help", "probe", call, tree)
        output = _output(job, run, call)
        missing = [f for f in recipe.requires_flags.flags
                   if f not in output.stdout + output.stderr]
        if run.exit_code == 0:
            known.parent.mkdir(parents=True, exist_ok=True)
            known.write_text(json.dumps({"argv": call.argv, "missing": missing}))
    if missing:
        raise CellFailure(Failure(kind="setup", reason=f"{Path(call.argv[0]).name} at "
                                  f"{(job.commit or '')[:12]} lacks {', '.join(missing)} (an "
                                  "older commit?); the recipe needs them"))


def _digest(argv: list[str]) -> str:
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]


def _builtins(ctx: Context, job: Job, tree: Path, build: Path, cache: Path,
              out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    models = ctx.models_dir.resolve()
    cell = job.cell
    return {"tree": str(tree), "build": str(build), "cache": str(cache), "model": cell.model,
            "model_dir": str(models / cell.model), "models_dir": str(models),
            "python": sys.executable, "backend": cell.backend, "out": str(out),
            "commit": job.commit or cell.commit}


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


def _run(ctx: Context, job: Job, label: str, role: execute.Role, call: Invocation,
         tree: Path) -> Run:
    assert job.staging is not None
    files = execute.Files(job.staging / f"{label}.stdout.txt",
                          job.staging / f"{label}.stderr.txt")
    cwd = _cwd(call, tree, job.staging)
    run = _command(ctx, job, execute.Command(role, label, call, cwd, files, job.staging))
    job.runs.append(run)
    return run


def _command(ctx: Context, job: Job, command: execute.Command) -> Run:
    return ctx.hooks.command(job, command, lambda: execute.run(command))


def _output(job: Job, run: Run, call: Invocation) -> execute.RunOutput:
    assert job.staging is not None
    return execute.output(run, job.staging, call.timeout_s)


def _raise_if_failed(parsed: object, what: str) -> None:
    if isinstance(parsed, Failure):
        raise CellFailure(parsed.model_copy(update={"reason": f"{what}: {parsed.reason}"}))


def _keep_build_logs(runs: list[Run], logs: Path, staging: Path, cached: bool) -> list[Run]:
    """The build's runs in the attempt; its logs copied by the cell that built it (a cached
    build's logs stay with the build, named by their path: no copy per cell)."""
    if not runs:
        return []
    if cached:
        return [r.model_copy(update={"stdout": str(logs / Path(r.stdout).name),
                                     "stderr": str(logs / Path(r.stderr).name)}) for r in runs]
    shutil.copytree(logs, staging / "build")
    return [r.model_copy(update={"stdout": f"build/{Path(r.stdout).name}",
                                 "stderr": f"build/{Path(r.stderr).name}"}) for r in runs]


def _write(job: Job, name: str, text: str) -> None:
    assert job.staging is not None
    (job.staging / name).write_text(text)


def _result(ctx: Context, job: Job, reading: BenchReading | ProfileReading | None,
            failure: Failure | None) -> AttemptResult:
    assert job.attempt is not None
    return AttemptResult(
        sweep_id=job.sweep_id, cell_id=job.cell.id, attempt=job.attempt, worker=ctx.name,
        host=facts(), requested_commit=job.cell.commit, commit=job.commit, started=job.started,
        ended=now(), build=job.build, runs=job.runs, target=job.target,
        reading=reading if isinstance(reading, BenchReading) else None,
        profile=reading if isinstance(reading, ProfileReading) else None, failure=failure,
        gate=job.group.gate)


def _push(ctx: Context, job: Job, result: AttemptResult) -> AttemptResult:
    """Store the attempt; if the store cannot take it, the cell fails with the store's reason
    (the state in Redis still says why, even when no artifact could be written)."""
    assert job.staging is not None and job.attempt is not None
    try:
        _write(job, "result.json", result.model_dump_json(indent=1))
        ctx.artifacts.publish(job.staging, job.sweep_id, job.cell.id, job.attempt)
        return result
    except ArtifactExists as exists:
        failure = Failure(kind="store", reason=str(exists))
    except OSError as error:
        failure = Failure(kind="store", reason=f"cannot store the attempt's artifacts on "
                          f"{ctx.name}: {error.strerror or error}")
    log.error("cell %s attempt %s: %s", job.cell.id, job.attempt, failure.reason)
    shutil.rmtree(job.staging, ignore_errors=True)
    return result.model_copy(update={"failure": failure, "reading": None, "profile": None})
