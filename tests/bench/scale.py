"""`submit`, `status` and `record` at 1,000 to 100,000 cells, against minimal baselines.

The sweeps are real: `submit` expands, signs and queues every cell. Running 10,000 real cells
is not possible here, so their states and artifacts are made from a handful of real ones: a
seed sweep runs on the real workers (the stand-in's decode on two backends, two arms), then
every cell of a large sweep gets a copy of a seed attempt of its own backend and arm, its
result.json rewritten with the cell's sweep, id and commit, published through the real
artifact store (staging, sha256 manifest, one rename), and taken and finished through the
real Redis scripts, as a worker does. The figures of a large record are therefore the seeds'
real figures, repeated.
"""

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobs.record.attempts import AttemptResult
from jobs.spec.cells import Cell
from jobs.strict import replaced
from runner import cli
from runner.demo.local_fleet import settings_env
from runner.demo.target_repo import git
from runner.submit import submit
from tests.bench import minimal
from tests.bench.bare_worker import bare_app
from tests.bench.figures import TIME, interleave, ratios, spread
from tests.bench.rig import REPO, Rig
from tests.bench.tree_memory import sample
from workers.shared import redis_keys
from workers.shared.leases import Lease
from workers.shared.queues import TASK, backend_queue
from workers.shared.redis_keys import PENDING, SWEEPS
from workers.shared.stores import MANIFEST, accept
from workers.shared.stores.local import LocalStore

BACKENDS = ("cpu", "metal")
MODELS = ("tinymoe-a3", "tinymoe-b1", "tinymoe-b2", "tinymoe-b3", "tinymoe-b4")
PARAMS = {"prompt_tokens": 16, "max_tokens": 4, "warmup_tokens": 1}
ARMS = [{"name": "gather", "recipe": "tinymoe-bench-decode", "baseline": True,
         "env": {"MLXCEL_FUSED_MOE": "0"}, "params": PARAMS},
        {"name": "fused", "recipe": "tinymoe-bench-decode", "params": PARAMS}]
REPEATS = 5
# Cells per commit: backends x models x arms x repeats.
PER_COMMIT = len(BACKENDS) * len(MODELS) * len(ARMS) * REPEATS
SEED_REPEATS = 3
# The name that takes and finishes the large sweeps' cells in Redis, and its lease's length.
POPULATE, POPULATE_LEASE_S = "bench-populate", 600.0
# Submit is timed up to this size (issue 17's goal names 10,000 cells); status and record
# at every size.
SUBMIT_UP_TO = 10_000


def spec(rig: Rig, name: str, commits: list[str], models: tuple[str, ...] = MODELS,
         n: int = REPEATS) -> dict[str, object]:
    return {"name": name, "target": {"repo": str(rig.target), "commits": commits},
            "models": list(models), "backends": {b: {"build": "tinymoe-build"} for b in BACKENDS},
            "arms": ARMS, "n": n, "warmup": 0}


def commits(rig: Rig, count: int) -> list[str]:
    """`count` commits of the target: its two real ones, then empty commits on top of main
    (the same tree; only their shas matter to submit, status and record)."""
    shas = list(rig.shas)
    tree = git(rig.target, "rev-parse", "main^{tree}")
    while len(shas) < count:
        shas.append(git(rig.target, "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                        "commit-tree", tree, "-p", shas[-1], "-m", f"bench commit {len(shas)}"))
    return shas[:count]


# ---- making large sweeps' states and artifacts from real cells -----------------------------

def seeds(rig: Rig) -> dict[tuple[str, str], list[Path]]:
    """Run the seed sweep on the real workers; its attempt folders by (backend, arm)."""
    sweep_id, cells = submit(rig.sweep_file(spec(rig, "seed", [rig.shas[-1]], MODELS[:1],
                                                 SEED_REPEATS)), rig.settings)
    rig.wait_final(sweep_id)
    found: dict[tuple[str, str], list[Path]] = {}
    for cell in cells:
        folder = Path(rig.settings.artifacts) / sweep_id / cell.id / "attempt-1"
        result = json.loads((folder / "result.json").read_text())
        assert result["failure"] is None, result["failure"]
        found.setdefault((cell.backend, cell.arm), []).append(folder)
    return found


def populate(rig: Rig, sweep_id: str, cells: list[Cell],
             seed: dict[tuple[str, str], list[Path]]) -> None:
    """Every cell done, with a copy of a seed attempt, through the real store and scripts."""
    store = LocalStore(Path(rig.settings.artifacts))
    instance = uuid.uuid4().hex
    # Taken and finished under a lease of its own: the seeds' workers hold theirs, live.
    Lease(rig.store.r, POPULATE, instance).take({"backend": "bench"}, takeover=True)
    results = {s: AttemptResult.model_validate_json((s / "result.json").read_text())
               for folders in seed.values() for s in folders}
    span = max(_at(r.ended) - _at(r.started) for r in results.values()) + timedelta(seconds=0.05)
    begin = datetime.now(UTC) - span * len(cells)
    for k, cell in enumerate(cells):
        source = seed[(cell.backend, cell.arm)][(cell.repeat - 1) % SEED_REPEATS]
        result = results[source]
        taken = rig.store.take(sweep_id, cell.id, 0, POPULATE, instance, POPULATE_LEASE_S)
        assert taken.attempt == 1, taken
        staging = store.staging()
        for path in source.rglob("*"):
            if path.is_file() and path.name not in (MANIFEST, "result.json"):
                target = staging / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        mine = shifted(result, begin + span * k - _at(result.started)).model_copy(update={
            "sweep_id": sweep_id, "cell_id": cell.id, "requested_commit": cell.commit,
            "commit": cell.commit})
        (staging / "result.json").write_text(mine.model_dump_json(indent=1))
        store.publish(staging, sweep_id, cell.id, 1)
        assert rig.store.finish(sweep_id, cell.id, POPULATE, instance, 1, "done", None,
                                POPULATE_LEASE_S)[0]
        accept(store, sweep_id, cell.id, 1, "done")


def shifted(result: AttemptResult, by: timedelta) -> AttemptResult:
    """The attempt moved in time: the cells of a large sweep ran one after another on their
    host, as a worker under the host lease runs them, never all at the seed's moment."""
    def move(text: str) -> str:
        return (_at(text) + by).isoformat(timespec="milliseconds")

    runs = [r.model_copy(update={"started": move(r.started), "ended": move(r.ended)})
            for r in result.runs]
    gate = replaced(result.gate, at=move(result.gate.at)) if result.gate else None
    return result.model_copy(update={"started": move(result.started),
                                      "ended": move(result.ended), "runs": runs, "gate": gate})


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def received(rig: Rig) -> None:
    """As if workers had taken every queued message: the queues and pending list emptied."""
    rig.store.r.delete(PENDING, *(backend_queue(b) for b in BACKENDS))


def drop(rig: Rig, sweep_id: str) -> None:
    """Remove a sweep that a timed submit made, so every round starts from the same Redis."""
    r = rig.store.r
    keys = list(r.scan_iter(match=redis_keys.sweep(sweep_id) + "*", count=1000))
    r.delete(*keys, PENDING, *(backend_queue(b) for b in BACKENDS))
    r.zrem(SWEEPS, sweep_id)
    shutil.rmtree(Path(rig.settings.artifacts) / sweep_id, ignore_errors=True)


# ---- the contestants ---------------------------------------------------------------------

def run_cli(rig: Rig, args: list[str], out: Path, timeout_s: float = 600.0,
            peaks: list[int] | None = None) -> str:
    """`benchfleet ARGS` as a process, as a user runs it; its stdout. `peaks` hears the
    process's peak RSS in KiB."""
    with out.open("w") as f:
        code, err = _process([*_cli(), *args], f, env={**os.environ, **settings_env(rig.settings)},
                             timeout_s=timeout_s, peaks=peaks)
    if code not in (0, 1):
        raise RuntimeError(f"benchfleet {' '.join(args)} failed: {err.strip()}")
    return out.read_text()


def _cli() -> list[str]:
    """The `benchfleet` command as a user runs it: the installed script where there is one."""
    exe = Path(sys.executable).with_name("benchfleet")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "runner.cli"]


def _process(argv: list[str], stdout: Any, env: dict[str, str] | None = None,
             timeout_s: float = 600.0, peaks: list[int] | None = None) -> tuple[int, str]:
    """Run `argv` to its end; its exit code and stderr. With `peaks`, it runs under GNU time,
    whose wait4 gives the command's own peak RSS: this process's would not do, since Linux
    counts the RSS of the process a child was forked from until its exec."""
    with tempfile.NamedTemporaryFile("w+") as err, tempfile.NamedTemporaryFile("r") as rss:
        wrapper = [TIME, "-f", "%M", "-o", rss.name] if peaks is not None else []
        code = waited([*wrapper, *argv], stdout, err, env, timeout_s)
        if peaks is not None and code in (0, 1):
            peaks.append(int(rss.read().split()[-1]))
        err.seek(0)
        return code, err.read()


def waited(argv: list[str], stdout: Any, stderr: Any, env: dict[str, str] | None,
           timeout_s: float) -> int:
    """Run `argv` and wait for its end in a blocking wait, its exit code; past `timeout_s` it
    is killed and TimeoutExpired raised. Not `subprocess.run(timeout=...)`: a timed wait
    polls, its sleeps growing to 50 ms, so a process's end was seen up to 50 ms late (a
    `sleep 0.123` timed 164 to 168 ms, against 133 untimed): every process figure of this
    block carried that, its baseline's too."""
    fired = threading.Event()

    def kill(proc: "subprocess.Popen[bytes]") -> None:
        fired.set()
        proc.kill()

    with subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, cwd=REPO) as proc:
        timer = threading.Timer(timeout_s, kill, args=(proc,))
        timer.start()
        try:
            code = proc.wait()
        finally:
            timer.cancel()
    if fired.is_set():
        raise subprocess.TimeoutExpired(argv, timeout_s)
    return code


def in_process(args: list[str], out: Path) -> str:
    """The same command through `runner.cli.main` in this process (imports already paid)."""
    with out.open("w") as f, contextlib.redirect_stdout(f):
        code = cli.main(args)
    if code not in (0, 1):
        raise RuntimeError(f"benchfleet {' '.join(args)} exited {code}")
    return out.read_text()


def minimal_process(args: list[str], peaks: list[int] | None = None) -> str:
    """The minimal baseline as a process; its stdout."""
    with tempfile.TemporaryFile("w+") as out:
        code, err = _process([sys.executable, "-m", "tests.bench.minimal", *args], out,
                             peaks=peaks)
        if code != 0:
            raise RuntimeError(f"tests.bench.minimal {args[0]} failed: {err.strip()}")
        out.seek(0)
        return out.read()


# ---- submit -------------------------------------------------------------------------------

def submit_times(rig: Rig, path: Path, rounds: int) -> dict[str, list[float]]:
    """The sweep made from `path` stays in Redis for status and record, so each timed submit
    of the same file says --again (it skips only the look-up that would refuse it)."""
    out = rig.root / "cli-out.txt"
    first, _ = submit(path, rig.settings, again=True)
    messages = [(q, m) for q in {backend_queue(b) for b in BACKENDS}
                for m in rig.store.r.lrange(q, 0, -1)]
    names = [*rig.store.r.scan_iter(match=redis_keys.sweep(first) + "*", count=1000), PENDING,
             *(backend_queue(b) for b in BACKENDS)]
    dumps = {k: payload for k in names if (payload := rig.store.r.dump(k)) is not None}
    envelopes = list(rig.store.r.hgetall(redis_keys.sweep(first, "envelopes")).values())
    drop(rig, first)
    app = bare_app(rig.settings.redis_url)

    def cli_process() -> None:
        drop(rig, run_cli(rig, ["submit", "--again", "--wait-for-worker", str(path)],
                          out).split()[-1])

    def cli_in_process() -> None:
        drop(rig, in_process(["submit", "--again", "--wait-for-worker", str(path)],
                             out).split()[-1])

    def library() -> None:
        drop(rig, submit(path, rig.settings, again=True)[0])

    def same_work() -> None:
        drop(rig, minimal_process(["submit", str(path), rig.settings.redis_url,
                                   str(rig.settings.artifacts),
                                   str(rig.settings.signing_key)]).split()[-1])

    def raw_messages() -> None:
        pipe = rig.store.r.pipeline(transaction=False)
        for queue, message in messages:
            pipe.lpush(queue, message)
        pipe.execute()
        received(rig)

    def raw_everything() -> None:
        pipe = rig.store.r.pipeline(transaction=False)
        for name, payload in dumps.items():
            pipe.restore(name, 0, payload, replace=True)
        pipe.zadd(SWEEPS, {first: time.time()})
        pipe.execute()
        drop(rig, first)

    def send_task_each() -> None:
        for raw in envelopes:
            app.send_task(TASK, args=[first, [json.loads(raw)]], queue="bench-send-task")
        rig.store.r.delete("bench-send-task")

    return interleave(rounds, {
        "submit (CLI process)": cli_process, "submit (CLI, in process)": cli_in_process,
        "submit() call": library, "submit: minimal script (process)": same_work,
        "raw pipeline, same messages": raw_messages,
        "raw pipeline, all submit writes": raw_everything,
        "Celery send_task per cell": send_task_each})


# ---- status and record --------------------------------------------------------------------

def status_times(rig: Rig, sweep_id: str, rounds: int) -> dict[str, list[float]]:
    out, url = rig.root / "cli-out.txt", rig.settings.redis_url
    return interleave(rounds, {
        "status (CLI process)": lambda: _ignore(run_cli(rig, ["status", sweep_id], out)),
        "status (CLI, in process)": lambda: _ignore(in_process(["status", sweep_id], out)),
        "status: minimal reader (process)": lambda: _ignore(minimal_process(
            ["status", url, sweep_id])),
        "status: minimal reader (in process)": lambda: _ignore(minimal.status(url, sweep_id))})


def record_times(rig: Rig, sweep_id: str, rounds: int, limit_s: float,
                 peaks: dict[str, list[int]]) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Record against the minimal reader. A record that cannot finish within `limit_s` is
    stopped and reported as such; one slower than `limit_s / 10` runs once, in a process.
    `peaks` hears each process's peak RSS (KiB)."""
    out, records = rig.root / "cli-out.txt", str(rig.root / "records")
    readers = minimal_readers(rig, sweep_id, peaks)
    mine = peaks.setdefault("record (CLI process)", [])
    start = time.perf_counter()
    try:
        run_cli(rig, ["record", sweep_id, "-o", records], out, timeout_s=limit_s, peaks=mine)
    except subprocess.TimeoutExpired:
        return interleave(rounds, readers), {"record (CLI process)": {"stopped_after_s": limit_s}}
    first = time.perf_counter() - start
    if first > limit_s / 10:
        return ({"record (CLI process)": [first], **interleave(rounds, readers)},
                {"record (CLI process)": {"ran_once": True}})
    return interleave(rounds, {
        "record (CLI process)": lambda: _ignore(run_cli(
            rig, ["record", sweep_id, "-o", records], out, peaks=mine)),
        "record (CLI, in process)": lambda: _ignore(in_process(
            ["record", sweep_id, "-o", records], out)),
        **readers}), {}


def minimal_readers(rig: Rig, sweep_id: str, peaks: dict[str, list[int]],
                    ) -> dict[str, Callable[[], None]]:
    artifacts = Path(rig.settings.artifacts)
    minimal.record(artifacts, sweep_id)  # every round reads from a warm page cache
    theirs = peaks.setdefault("record: minimal reader (process)", [])
    return {"record: minimal reader (process)": lambda: _ignore(minimal_process(
                ["record", str(artifacts), sweep_id], theirs)),
            "record: minimal reader (in process)": lambda: _ignore(
                minimal.record(artifacts, sweep_id))}


def tree_peaks(rig: Rig, sweep_id: str, limit_s: float) -> dict[str, Any]:
    """The record's and the minimal reader's memory measured alike, once each and untimed:
    the footprint of the command's whole process tree (tests/bench/tree_memory.py), where GNU
    time's peak is its largest process's alone and the record forks the children that read
    ahead and draw. A command that fails or outlasts `limit_s` is said so in its place; the
    block's timings stand."""
    artifacts, records = str(rig.settings.artifacts), str(rig.root / "records")
    runs = {"record (CLI process)": ([*_cli(), "record", sweep_id, "-o", records], (0, 1)),
            "record: minimal reader (process)": (
                [sys.executable, "-m", "tests.bench.minimal", "record", artifacts, sweep_id],
                (0,))}
    seen: dict[str, Any] = {}
    for name, (argv, fine) in runs.items():
        tree = sample(argv, cwd=str(REPO), timeout_s=limit_s)
        seen[name] = tree if tree["exit"] in fine else {
            "error": f"exited {tree['exit']} under the memory sampler", "argv": argv}
    return seen


def _ignore(_: object) -> None:
    pass


def scale(rig: Rig, sizes: list[int], rounds: int, record_limit_s: float) -> dict[str, Any]:
    """Make the sweeps (the workers must still run, for the seeds), then time everything."""
    seed = seeds(rig)
    rig.stop()  # nothing may take the large sweeps' messages, nor load the machine
    os.environ.update(settings_env(rig.settings))  # the in-process CLI reads its settings here
    shas = commits(rig, max(sizes) // PER_COMMIT)
    made: dict[int, dict[str, Any]] = {}
    for size in sizes:
        path = rig.sweep_file(spec(rig, f"scale{size}", shas[:size // PER_COMMIT]))
        start = time.perf_counter()
        sweep_id, cells = submit(path, rig.settings)
        received(rig)
        populate(rig, sweep_id, cells, seed)
        made[size] = {"path": path, "sweep_id": sweep_id, "cells": len(cells),
                      "populate_s": time.perf_counter() - start}
        print(f"[bench] {size} cells made in {made[size]['populate_s']:.0f} s", flush=True)
    # The made attempts written back to disk before anything is timed, so that the first
    # timed command does not share the disk with the kernel's writing of them: in a run
    # without this, the 100,000-cell record (timed once, first) took 76 s, and the minimal
    # reader's three rounds after it 37, 26 and 22 s.
    os.sync()
    out = rig.root / "cli-out.txt"
    for args in (["status", made[sizes[0]]["sweep_id"]],
                 ["submit", "--again", "--wait-for-worker", str(made[sizes[0]]["path"])]):
        text = in_process(args, out)  # imports paid once, before any in-process timing
        if args[0] == "submit":
            drop(rig, text.split()[-1])
    results: dict[str, Any] = {}
    for size in sizes:
        m = made[size]
        times = submit_times(rig, m["path"], rounds) if size <= SUBMIT_UP_TO else {}
        times.update(status_times(rig, m["sweep_id"], rounds))
        notes = _skip_record(results, size, record_limit_s)
        peaks: dict[str, list[int]] = {}
        if notes:  # the baseline still runs: it is the figure the bound is set against
            times.update(interleave(rounds, minimal_readers(rig, m["sweep_id"], peaks)))
        else:
            record, notes = record_times(rig, m["sweep_id"], rounds, record_limit_s, peaks)
            times.update(record)
        ran = not {"not_run", "stopped_after_s"} & notes.get("record (CLI process)", {}).keys()
        trees = tree_peaks(rig, m["sweep_id"], record_limit_s) if ran else {}
        results[str(size)] = {"cells": m["cells"], "sweep_id": m["sweep_id"],
                              "generated_s": round(m["populate_s"], 1), "times_s": times,
                              "notes": notes, "figures": _figures(times),
                              "peak_rss_kib": {k: v for k, v in peaks.items() if v},
                              "tree_peak": trees}
        print(f"[bench] {size} cells timed", flush=True)
    return results


def _skip_record(done: dict[str, Any], size: int, limit_s: float) -> dict[str, Any]:
    """A size whose record would take longer than the limit is not run, with the lower bound
    said instead: a smaller size stopped at the limit, or the two largest smaller sizes' medians
    (one round slowed by another job must not decide) extended by their cost per cell. Each
    cell is read, hashed, validated and compared, so the time grows at least that fast; scaling
    one size's whole time would not be a bound, since part of it (imports, plots) is fixed."""
    timed: list[tuple[int, float]] = []
    for smaller, result in sorted(done.items(), key=lambda item: int(item[0])):
        note = result["notes"].get("record (CLI process)", {})
        if "stopped_after_s" in note or "not_run" in note:
            bound = note.get("at_least_s", limit_s)
            return {"record (CLI process)": {"not_run": True, "at_least_s": bound,
                                             "from_size": int(smaller)}}
        timed.append((int(smaller), statistics.median(result["times_s"]["record (CLI process)"])))
    if len(timed) < 2:
        return {}
    (n1, t1), (n2, t2) = timed[-2:]
    bound = t2 + max(t2 - t1, 0.0) / (n2 - n1) * (size - n2)
    if bound > limit_s:
        return {"record (CLI process)": {"not_run": True, "at_least_s": bound,
                                         "from_size": n2}}
    return {}


# Each contestant against its baseline (ratios per round, paired).
PAIRS = {
    "submit (CLI process)": ["submit: minimal script (process)", "raw pipeline, same messages",
                             "Celery send_task per cell"],
    "submit() call": ["raw pipeline, same messages", "raw pipeline, all submit writes",
                      "Celery send_task per cell"],
    "status (CLI process)": ["status: minimal reader (process)"],
    "status (CLI, in process)": ["status: minimal reader (in process)"],
    "record (CLI process)": ["record: minimal reader (process)"],
    "record (CLI, in process)": ["record: minimal reader (in process)"],
}


def _figures(times: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {name: spread(xs) for name, xs in times.items()}
    out["ratios"] = {f"{a} / {b}": spread(_paired(times[a], times[b]))
                     for a, bs in PAIRS.items() for b in bs if a in times and b in times}
    return out


def _paired(ours: list[float], theirs: list[float]) -> list[float]:
    """Per-round ratios; a contestant that ran once is set against the baseline's median."""
    if len(ours) == len(theirs):
        return ratios(ours, theirs)
    middle = statistics.median(theirs)
    return [x / middle for x in ours]
