"""The task: run one group's cells on this host and push their artifacts.

This file is the measurement itself — checkout, the cell's plan, build, checks, its runs,
parse, push. What happens around it (signature, route, lease, cancel, retries, host lease,
idle gate, events) are the hooks in workers/hooks/, which the worker chains around every
message, every cell and every command.
"""

import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.errors import UserError
from jobs.parsers import PARSERS, PROFILE_PARSERS
from jobs.parsers.readings import BenchReading, Failure, Parsed, ProfileInput, ProfileReading
from jobs.record.attempts import AttemptResult, BuildInfo, Run
from jobs.spec.cells import Cell
from jobs.spec.recipes import Catalogue, Invocation
from workers import descendants, execute
from workers.hooks import Chain, Dropped, Runs
from workers.hooks.lease import CellLease
from workers.host_facts import facts
from workers.in_flight import Arrival, Attempt, Group
from workers.offer import Offering
from workers.plan import Checkout, Plan, Step, resolve
from workers.provenance import read_facts
from workers.shared.clock import now
from workers.shared.kept_names import kept
from workers.shared.leases import LeaseLost
from workers.shared.messages import Signed
from workers.shared.parser_files import text_files
from workers.shared.state import Store
from workers.shared.stores import ArtifactExists, ArtifactStore
from workers.staging import Staging, named_folder, tidy
from workers.workspace import CellFailure, Workspace

log = logging.getLogger(__name__)
Reading = BenchReading | ProfileReading


@dataclass(frozen=True)
class Context:
    """Everything a worker process needs to run cells; built once when it starts."""

    name: str
    backend: str
    models_dir: Path
    catalogue: Catalogue
    workspace: Workspace
    artifacts: ArtifactStore
    staging: Staging  # the next attempt's folder, made between cells (workers/staging.py)
    state: Store
    lease: CellLease  # the lease hook, also ticked between cells (workers/service.py)
    hooks: Chain
    offering: Offering | None = None  # what it offers the fleet (workers/offer.py)


def run_group(ctx: Context, sweep_id: str, task_id: str, items: list[list[str]]) -> str:
    """Run a message's cells in order; returns a one-line summary for Celery's log."""
    outcomes = []
    try:
        group = ctx.hooks.before_group(Group(sweep_id, task_id,
                                             tuple(Signed(*item[:2]) for item in items)))
        for item in group.cells:
            outcomes.append(run_one(ctx, Arrival(group, item)))
    except LeaseLost as lost:
        # Its cells are another's now (the reaper queued them again, or the worker that took
        # the name settled them): this worker stops them and takes its name back, or stops.
        log.error("%s; this worker stops this message's cells", lost)
        ctx.lease.regain()
        return f"abandoned: {lost}"
    ctx.hooks.after_group(group)
    left = len(group.items) - len(group.cells)
    return ", ".join(outcomes + ([f"{left} not run here"] if left else []))


def run_one(ctx: Context, arrival: Arrival) -> str:
    try:
        attempt, refusal = ctx.hooks.admit(arrival)
    except Dropped as why:
        log.info("cell not run: %s", why)
        return f"not run ({why})"
    except LeaseLost:
        raise
    except Exception as error:  # a hook's own failure before the take: nothing of it ran
        log.exception("before cell %s", arrival.cell.id)
        return f"not run ({type(error).__name__}: {error})"
    try:
        staging = ctx.staging.take()
    except OSError as error:
        result = _result(ctx, attempt, None, Failure(
            kind="store", reason=f"cannot stage the attempt's artifacts on {ctx.name}: "
            f"{error.strerror or error}"))
    else:
        result = _push(ctx, attempt, staging, _result(ctx, attempt, None, refusal) if refusal
                       else measure(ctx, attempt, staging))
    ctx.hooks.after_cell(attempt, result)
    ctx.staging.prepare()  # the cell is settled: a message that comes later finds it made
    return "failed" if result.failure else "done"


def measure(ctx: Context, attempt: Attempt, staging: Path) -> AttemptResult:
    """Checkout, plan, build, checks and the cell's runs; whatever ends it, the result keeps
    every run it made."""
    runs: list[Run] = []
    build: BuildInfo | None = None
    reading: Reading | None = None
    failure: Failure | None = None
    try:
        plan = _plan(ctx, attempt.cell, _checkout(ctx, attempt.cell), staging)
        attempt = replace(attempt, plan=plan)
        build = _build(ctx, attempt, plan, runs)
        if not build.ok:
            raise CellFailure(Failure(kind="build", reason=build.reason or "build failed"))
        _check(ctx, attempt, plan, runs)
        reading = (_profile if plan.kind == "profile" else _bench)(ctx, attempt, plan, runs)
    except CellFailure as failed:
        failure = failed.failure
    except UserError as error:
        failure = Failure(kind="setup", reason=str(error))
    except LeaseLost:
        raise
    except Exception as error:  # a bug of ours, or the host (a full disk): end the cell, say why
        log.exception("cell %s failed inside the worker", attempt.cell.id)
        failure = Failure(kind="setup", reason=f"worker {ctx.name}: {type(error).__name__}: "
                          f"{error}")
    return _result(ctx, attempt, reading, failure, build, runs)


def _checkout(ctx: Context, cell: Cell) -> Checkout:
    """The cell's commit checked out, and its provenance read (once per target and commit)."""
    if cell.backend != ctx.backend:
        raise UserError(f"cell for backend {cell.backend} reached worker {ctx.name}, which "
                        f"serves {ctx.backend}")
    commit, tree = ctx.workspace.checkout(cell.repo, cell.commit)
    target = ctx.workspace.facts(tree, lambda: read_facts(ctx.catalogue.provenance, tree))
    return Checkout(commit, tree, target,
                    ctx.workspace.build_dir(cell.repo, commit, cell.backend, cell.build.recipe),
                    ctx.workspace.cache_dir(cell.repo, cell.backend))


def _plan(ctx: Context, cell: Cell, checkout: Checkout, staging: Path) -> Plan:
    named_folder(staging, "out")
    return resolve(ctx.catalogue, f"the catalogue of worker {ctx.name}", cell, checkout,
                   staging, ctx.models_dir)


def _build(ctx: Context, attempt: Attempt, plan: Plan, runs: list[Run]) -> BuildInfo:
    """The build's steps, once per (commit, backend, recipe); a cached one runs nothing."""
    where = plan.checkout
    earlier: list[Run] = []  # a build step's superseded tries: before the build's own runs

    def run(command: execute.Command) -> Run:
        *tries, last = _command(ctx, attempt, command)
        earlier.extend(tries)
        return last

    scope = f"{attempt.sweep_id}#{attempt.envelope.generation}"
    built = ctx.workspace.build(where.build_dir, where.cache, where.tree, plan.build_recipe,
                                list(plan.build), scope, attempt.envelope.rebuild, run)
    runs += earlier + _keep_build_logs(built.runs, built.logs, plan.staging, built.info.cached)
    return built.info


def _check(ctx: Context, attempt: Attempt, plan: Plan, runs: list[Run]) -> None:
    """The recipe's own checks: the checkpoint is here, the build has the flags it uses."""
    if plan.model_dir is not None and not plan.model_dir.is_dir():
        raise CellFailure(Failure(kind="setup", reason=f"checkpoint {attempt.cell.model} not "
                                  f"in MODELS_DIR ({plan.models_dir}) on host "
                                  f"{facts().hostname}"))
    _check_flags(ctx, attempt, plan, runs)


def _bench(ctx: Context, attempt: Attempt, plan: Plan, runs: list[Run]) -> BenchReading:
    *warmups, measured = plan.runs
    for step in warmups:
        _raise_if_failed(_bench_run(ctx, attempt, plan, step, runs), "warm-up run")
    parsed = _bench_run(ctx, attempt, plan, measured, runs)
    _write(plan.staging, "parsed.json", parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "measured run")
    assert isinstance(parsed, BenchReading)  # a bench parser gives a reading or a Failure
    return parsed


def _bench_run(ctx: Context, attempt: Attempt, plan: Plan, step: Step, runs: list[Run]
               ) -> Parsed:
    """One bench run, parsed with the text files it created or changed under {out}."""
    before = _stamps(plan.out)
    run = _run(ctx, attempt, plan, step, runs)
    after = _stamps(plan.out)
    written = {k: v for k, v in text_files(plan.out).items() if after.get(k) != before.get(k)}
    _note_files(runs, run, sorted(written))
    output = _output(plan, run, step.call)
    return PARSERS[plan.parser](output.model_copy(update={"files": written}))


def _profile(ctx: Context, attempt: Attempt, plan: Plan, runs: list[Run]) -> ProfileReading:
    outputs = {}
    for step in plan.runs:
        run = _run(ctx, attempt, plan, step, runs)
        outputs[step.name] = _output(plan, run, step.call)
        if run.exit_code != 0:
            break  # later steps read what this one should have written
    parsed = PROFILE_PARSERS[plan.parser](ProfileInput(steps=outputs,
                                                       files=text_files(plan.out)))
    _write(plan.staging, "parsed.json", parsed.model_dump_json(indent=1))
    _raise_if_failed(parsed, "profile")
    assert isinstance(parsed, ProfileReading)  # a profile parser gives a reading or a Failure
    return parsed


def _check_flags(ctx: Context, attempt: Attempt, plan: Plan, runs: list[Run]) -> None:
    call = plan.probe
    if call is None:
        return
    # A build's `--help` never changes: ask it once per build and probe, not once per cell.
    known = plan.checkout.build_dir / "flags" / f"{_digest(call.argv)}.json"
    if known.exists():
        missing = json.loads(known.read_text())["missing"]
    else:
        run = _run(ctx, attempt, plan, Step("probe-help", "probe", call, "probe-help"), runs)
        output = _output(plan, run, call)
        missing = [f for f in plan.required_flags if f not in output.stdout + output.stderr]
        if run.exit_code == 0:
            known.parent.mkdir(parents=True, exist_ok=True)
            known.write_text(json.dumps({"argv": call.argv, "missing": missing}))
    if missing:
        raise CellFailure(Failure(kind="setup", reason=f"{Path(call.argv[0]).name} at "
                                  f"{plan.checkout.commit[:12]} lacks {', '.join(missing)} "
                                  "(an older commit?); the recipe needs them"))


def _digest(argv: list[str]) -> str:
    return hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]


def _note_files(runs: list[Run], run: Run, files: list[str]) -> None:
    """Name on the run the files its parser reads, so its output can be parsed again."""
    at = next(i for i, r in enumerate(runs) if r is run)
    runs[at] = run.model_copy(update={"files": files})


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


def _run(ctx: Context, attempt: Attempt, plan: Plan, step: Step, runs: list[Run]) -> Run:
    """Run one step through the hooks; every run it made joins `runs`, the one that counts
    (the last) is returned."""
    files = execute.Files(plan.staging / kept(f"{step.label}.stdout.txt"),
                          plan.staging / kept(f"{step.label}.stderr.txt"))
    cwd = _cwd(step.call, plan.checkout.tree, plan.staging)
    ran = _command(ctx, attempt, execute.Command(step.role, step.label, step.call, cwd, files,
                                                 plan.staging))
    runs.extend(ran)
    return ran[-1]


def _command(ctx: Context, attempt: Attempt, command: execute.Command) -> Runs:
    descendants.warm()  # before the hooks, which rest it while they wait (workers/hooks/keeper.py)
    return ctx.hooks.command(attempt, command, lambda: (execute.run(command),))


def _output(plan: Plan, run: Run, call: Invocation) -> execute.RunOutput:
    return execute.output(run, plan.staging, call.timeout_s)


def _raise_if_failed(parsed: object, what: str) -> None:
    if isinstance(parsed, Failure):
        raise CellFailure(parsed.model_copy(update={"reason": f"{what}: {parsed.reason}"}))


def _keep_build_logs(runs: list[Run], logs: Path, staging: Path, cached: bool) -> list[Run]:
    """The build's runs in the attempt; its logs copied by the cell that built it (a cached
    build's logs stay with the build, named by their path: no copy per cell)."""
    if not runs:
        return []
    if cached:
        return [r.model_copy(update={"stdout": str(logs / _log_name(r.stdout)),
                                     "stderr": str(logs / _log_name(r.stderr))}) for r in runs]
    shutil.copytree(logs, staging / "build")
    return [r.model_copy(update={"stdout": f"build/{_log_name(r.stdout)}",
                                 "stderr": f"build/{_log_name(r.stderr)}"}) for r in runs]


def _log_name(path: str) -> str:
    return kept(os.path.basename(path))  # no Path of it: its parts would be interned anew


def _write(staging: Path, name: str, text: str) -> None:
    (staging / name).write_text(text)


def _result(ctx: Context, attempt: Attempt, reading: Reading | None, failure: Failure | None,
            build: BuildInfo | None = None, runs: list[Run] | None = None) -> AttemptResult:
    """The attempt's result, with what the hooks add to it (the idle gate's readings)."""
    checkout = attempt.plan.checkout if attempt.plan else None
    result = AttemptResult(
        sweep_id=attempt.sweep_id, cell_id=attempt.cell.id, attempt=attempt.number,
        worker=ctx.name, host=facts(), requested_commit=attempt.cell.commit,
        commit=checkout.commit if checkout else None, started=attempt.started, ended=now(),
        build=build, runs=runs or [], target=checkout.target if checkout else {},
        reading=reading if isinstance(reading, BenchReading) else None,
        profile=reading if isinstance(reading, ProfileReading) else None, failure=failure,
        parser=attempt.plan.parser if attempt.plan else None,
        asked=attempt.plan.asked if attempt.plan else {})
    return ctx.hooks.before_store(attempt, result)


def _push(ctx: Context, attempt: Attempt, staging: Path, result: AttemptResult
          ) -> AttemptResult:
    """Store the attempt; if the store cannot take it, the cell fails with the store's reason
    (the state in Redis still says why, even when no artifact could be written)."""
    try:
        tidy(staging)
        _write(staging, "result.json", result.model_dump_json(indent=1))
        ctx.artifacts.publish(staging, attempt.sweep_id, attempt.cell.id, attempt.number)
        return result
    except ArtifactExists as exists:
        failure = Failure(kind="store", reason=str(exists))
    except OSError as error:
        failure = Failure(kind="store", reason=f"cannot store the attempt's artifacts on "
                          f"{ctx.name}: {error.strerror or error}")
    log.error("cell %s attempt %s: %s", attempt.cell.id, attempt.number, failure.reason)
    shutil.rmtree(staging, ignore_errors=True)
    return result.model_copy(update={"failure": failure, "reading": None, "profile": None})
