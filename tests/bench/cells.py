"""What a worker costs around a command: dispatch latency, no-op throughput, memory, and how
often it wakes while a measured command runs; each against bare Celery in the same run.

Definitions, the same on both sides:
- dispatch: the monotonic time just after the call that writes the message into Redis
  returns (benchfleet: `submit`, whose last act is the pipeline that writes the messages;
  bare: `send_task`);
- command start: the kernel's exec event of the measured command's process, a child of the
  worker (tests/bench/procwatch.py);
- benchfleet's idle gate runs before a group's first measured command; it is capped here
  (tests/bench/rig.py) and what it waited, read from the attempt, is reported apart and
  taken out of dispatch.
"""

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.bench import floors
from tests.bench.figures import percentile, ratios, spread
from tests.bench.procwatch import Exec
from tests.bench.rig import HERE, Rig, read_proc
from workers.shared.stores.local import LocalStore

# A worker is idle again when none of its threads has run for this long.
QUIET_S = 0.15
BUILD = {"build": "tinymoe-build"}


def dispatch_spec(rig: Rig, commit: str) -> dict[str, object]:
    """One cell of the shipped mlxcel-bench-decode recipe (flag probe included) on the
    stand-in, its build from the shipped tinymoe-build recipe."""
    return {"name": "dispatch", "target": {"repo": str(rig.target), "commits": [commit]},
            "models": ["tinymoe-a3"], "backends": {"cpu": BUILD},
            "arms": [{"name": "decode", "recipe": "mlxcel-bench-decode", "baseline": True,
                      "params": {"prompt_tokens": 16, "max_tokens": 4, "warmup_tokens": 1}}],
            "n": 1, "warmup": 0}


def noop_spec(rig: Rig, backend: str, n: int) -> dict[str, object]:
    return {"name": "noop", "target": {"repo": str(rig.target), "commits": [rig.shas[-1]]},
            "models": ["tinymoe-a3"], "backends": {backend: BUILD},
            "arms": [{"name": "noop", "recipe": "noop", "baseline": True}], "n": n,
            "warmup": 0}


def spin_spec(rig: Rig, seconds: float) -> dict[str, object]:
    return {"name": "spin", "target": {"repo": str(rig.target), "commits": [rig.shas[-1]]},
            "models": ["tinymoe-a3"], "backends": {"cpu": BUILD},
            "arms": [{"name": "spin", "recipe": "spin", "baseline": True,
                      "params": {"spin": str(HERE / "spin.py"), "seconds": seconds}}],
            "n": 1, "warmup": 0}


# ---- dispatch → command start ---------------------------------------------------------------

def dispatch(rig: Rig, worker: int, bare: int, rounds: int) -> dict[str, Any]:
    """Latency from dispatch to the measured command's exec, one cell at a time, the three
    contestants interleaved in an order rotated every round."""
    refs = {"sha": rig.shas[-1], "branch": "main"}
    for ref in refs.values():  # the first cell clones, builds and probes: not counted
        _bf_once(rig, worker, ref)
    command = _measured_run(rig, _bf_once(rig, worker, refs["sha"])["sweep_id"])
    samples: dict[str, list[dict[str, Any]]] = {"sha": [], "branch": [], "bare": []}
    for r in range(rounds):
        order = ["sha", "branch", "bare"]
        for who in order[r % 3:] + order[:r % 3]:
            if who == "bare":
                samples["bare"].append(_bare_once(rig, bare, command))
            else:
                samples[who].append(_bf_once(rig, worker, refs[who]))
    return {"command": command, "samples": samples, **_latency_figures(samples),
            "store_inodes": floors.new_inodes(_probe_folder(rig))}


def _bf_once(rig: Rig, worker: int, ref: str) -> dict[str, Any]:
    sweep_id, cells, t0 = rig.submit(dispatch_spec(rig, ref))
    rig.wait_final(sweep_id)
    quiesce(worker)
    until = time.monotonic_ns()
    execs = rig.watch.since(worker, t0, until)
    direct = rig.watch.commands(worker, t0, until)
    measured = direct[-1]  # the cell's last command is its measured run
    assert measured.argv is None or "--help" not in measured.argv, measured
    result = _result(rig, sweep_id, cells[0].id)
    assert result["failure"] is None, result["failure"]
    gate = (result.get("gate") or {}).get("waited_s", 0.0)
    latency = (measured.ns - t0) / 1e9
    return {"sweep_id": sweep_id, "latency_s": latency, "gate_s": gate,
            "dispatch_s": latency - gate, "commands": [_show(e) for e in direct],
            "processes": len({e.pid for e in execs}), "steps": _steps(rig, t0, direct)}


def _steps(rig: Rig, t0: int, direct: list[Exec]) -> list[list[object]]:
    """Where a benchfleet dispatch goes: [what, seconds] for the worker's own work before each
    command it starts, and each command that runs before the measured one (the flag probe)."""
    steps: list[list[object]] = []
    last = t0
    for i, e in enumerate(direct):
        first = next(x for x in rig.watch.since(e.parent, t0) if x.pid == e.pid)
        steps.append([f"worker, before command {i + 1}", (first.ns - last) / 1e9])
        if first is not e:  # a wrapper exec'd first and then exec'd the command
            steps.append([f"wrapper `{_show(first).split()[0]}`, until command {i + 1} "
                          "exec'd", (e.ns - first.ns) / 1e9])
        if i == len(direct) - 1:
            break
        last = rig.watch.exits.get(e.pid, e.ns)
        steps.append([f"command {i + 1}: {_show(e)[:60]}", (last - e.ns) / 1e9])
    return steps


def _bare_once(rig: Rig, bare: int, command: dict[str, Any]) -> dict[str, Any]:
    t0 = rig.send_bare(command["argv"], command["cwd"], command["env"])
    started = rig.watch.wait_exec(bare, t0, 120.0)
    rig.watch.wait_exit(started.pid, 600.0)
    quiesce(bare)
    until = time.monotonic_ns()
    execs = rig.watch.since(bare, t0, until)
    latency = (started.ns - t0) / 1e9
    return {"latency_s": latency, "gate_s": 0.0, "dispatch_s": latency,
            "commands": [_show(e) for e in rig.watch.commands(bare, t0, until)],
            "processes": len({e.pid for e in execs})}


def _latency_figures(samples: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for who, rows in samples.items():
        xs = [s["dispatch_s"] for s in rows]
        out[who] = {"p50_s": percentile(xs, 50), "p99_s": percentile(xs, 99), "min_s": min(xs),
                    "max_s": max(xs), "gate": spread([s["gate_s"] for s in rows]),
                    "processes": spread([float(s["processes"]) for s in rows])}
    bare = [s["dispatch_s"] for s in samples["bare"]]
    for who in ("sha", "branch"):
        ours = [s["dispatch_s"] for s in samples[who]]
        out[who]["ratio_p50"] = out[who]["p50_s"] / out["bare"]["p50_s"]
        out[who]["ratio_p99"] = out[who]["p99_s"] / out["bare"]["p99_s"]
        out[who]["ratio_per_round"] = spread(ratios(ours, bare))
    return out


def _measured_run(rig: Rig, sweep_id: str) -> dict[str, Any]:
    """The measured command exactly as benchfleet ran it: argv, working directory, env."""
    runs = _result(rig, sweep_id, rig.store.sweep(sweep_id)[1][0].id)["runs"]
    run = next(r for r in runs if r["role"] == "measure")
    return {"argv": run["argv"], "cwd": run["cwd"], "env": run["env"]}


def _result(rig: Rig, sweep_id: str, cell_id: str) -> dict[str, Any]:
    files = LocalStore(Path(rig.settings.artifacts)).read(sweep_id, cell_id, 1)
    data: dict[str, Any] = json.loads(files["result.json"].read_text())
    return data


def _show(e: Exec) -> str:
    if e.argv is None:
        return "?"
    return " ".join(Path(a).name if i == 0 or "/" in a else a for i, a in enumerate(e.argv))[:120]


# ---- no-op throughput and memory --------------------------------------------------------------

def throughput(rig: Rig, worker: int, bare: int, backend: str, queue: str, rounds: int,
               cells: int, stored: tuple[int, str]) -> dict[str, Any]:
    """Cells per second of a command that exits at once, start to start, `cells` at a time,
    for benchfleet, bare Celery and the floor (`stored`: a bare worker of its own and its
    queue, running bare_worker.stored); and benchfleet's and bare Celery's memory after their
    first cell and after rounds × cells more."""
    warm = rig.submit(noop_spec(rig, backend, 1))[0]  # clone and build: not counted
    rig.wait_final(warm)
    argv = _measured_run(rig, warm)["argv"]
    rig.send_bare(argv, queue=queue)
    floor, floor_queue = stored
    _stored_rate(rig, floor, argv, floor_queue, 2, "bare-stored-warm")  # its first use
    quiesce(worker)
    quiesce(bare)
    memory = {"benchfleet": {"after_1": _memory(worker)}, "bare": {"after_1": _memory(bare)}}
    ours: list[float] = []
    theirs: list[float] = []
    same: list[float] = []
    contestants = ("bf", "bare", "stored")
    for r in range(rounds):
        for who in contestants[r % 3:] + contestants[:r % 3]:  # the order rotated
            if who == "bf":
                ours.append(_bf_rate(rig, worker, backend, cells))
            elif who == "bare":
                theirs.append(_bare_rate(rig, bare, argv, queue, cells))
            else:
                same.append(_stored_rate(rig, floor, argv, floor_queue, cells,
                                         f"bare-stored-{r}"))
    total = 1 + rounds * cells
    memory["benchfleet"][f"after_{total}"] = _memory(worker)
    memory["bare"][f"after_{total}"] = _memory(bare)
    return {"store_inodes": floors.new_inodes(_probe_folder(rig)),
            "attempt_inodes": _attempt_inodes(rig),
            "cells_per_round": cells, "rounds": rounds,
            "stored_attempt_inodes": _attempt_inodes(rig, "bare-stored-*"),
            "stored_worker": "its own",
            "benchfleet_cells_per_s": ours, "bare_cells_per_s": theirs,
            "stored_cells_per_s": same,
            "benchfleet": spread(ours), "bare": spread(theirs), "stored": spread(same),
            "ratio": spread(ratios(ours, theirs)), "stored_ratio": spread(ratios(same, theirs)),
            "vs_stored": spread(ratios(ours, same)), "memory": memory,
            "cells_total": total}


def _probe_folder(rig: Rig) -> Path:
    return Path(rig.settings.artifacts) / f".inode-probe-{os.getpid()}"


def _attempt_inodes(rig: Rig, sweeps: str = "noop-*") -> int:
    """The new files and folders of a no-op cell of the last round (the warm-up's first cell
    also keeps the build's logs): its cell's folder, the accepted marker beside its attempt,
    the attempt's folder and all it holds."""
    newest = max(Path(rig.settings.artifacts).glob(sweeps), key=lambda p: p.stat().st_mtime)
    cell = next(p for p in newest.iterdir() if p.is_dir())
    return 1 + sum(1 for _ in cell.rglob("*"))


def memory(rig: Rig, worker: int, bare: int, backend: str, queue: str, cells: int,
           every: int = 1000) -> dict[str, Any]:
    """Each worker's VmRSS over `cells` more no-op cells (sweeps of 100, one message each),
    read every `every` cells after `every` cells of warm-up (a worker's first cells fill its
    caches and its allocator's arenas: growth, but not per cell); growth per cell from the
    first reading to the last."""
    warm = rig.submit(noop_spec(rig, backend, 1))[0]  # clone and build: before the first reading
    rig.wait_final(warm)
    argv = _measured_run(rig, warm)["argv"]
    rig.send_bare(argv, queue=queue)
    quiesce(worker)
    quiesce(bare)
    readings: dict[str, list[list[int]]] = {"benchfleet": [], "bare": []}
    for done in range(-every, cells + 1, 100):
        if done >= 0 and done % every == 0:
            readings["benchfleet"].append([done, _memory(worker)["VmRSS"]])
            readings["bare"].append([done, _memory(bare)["VmRSS"]])
        if done < cells:
            _bf_rate(rig, worker, backend, 100)
            _bare_rate(rig, bare, argv, queue, 100)
    return {"cells": cells, "warmup_cells": every, "rss_kb": readings,
            **{who: {"growth_b_per_cell": (r[-1][1] - r[0][1]) * 1024 / cells}
               for who, r in readings.items()}}


def _bf_rate(rig: Rig, worker: int, backend: str, n: int) -> float:
    sweep_id, _, t0 = rig.submit(noop_spec(rig, backend, n))
    rig.wait_final(sweep_id)
    quiesce(worker)
    return _rate(rig.watch.commands(worker, t0), n)


def _bare_rate(rig: Rig, bare: int, argv: list[str], queue: str, n: int) -> float:
    t0 = time.monotonic_ns()
    for _ in range(n):
        rig.send_bare(argv, queue=queue)
    return _bare_execs(rig, bare, t0, n)


def _stored_rate(rig: Rig, bare: int, argv: list[str], queue: str, n: int,
                 sweep_id: str) -> float:
    """As `_bare_rate`, each task also storing its attempt (bare_worker.stored); every cell
    must be stored, or the floor would be counted faster than it is (its tasks' errors only
    reach the bare worker's log)."""
    t0 = time.monotonic_ns()
    for k in range(n):
        rig.send_stored(argv, sweep_id, f"cell-{k}", queue=queue)
    rate = _bare_execs(rig, bare, t0, n)
    states = rig.store.r.hvals(f"bare-stored:{sweep_id}:states")  # decoded: the Store's
    assert states == ["done"] * n, f"the floor stored {states.count('done')} of {n}"
    return rate


def _bare_execs(rig: Rig, bare: int, t0: int, n: int) -> float:
    """The rate of the `n` commands the bare worker starts after `t0`, once the last ended."""
    last = None
    for _ in range(n):
        last = rig.watch.wait_exec(bare, last.ns + 1 if last else t0, 120.0)
    assert last is not None
    rig.watch.wait_exit(last.pid, 60.0)
    quiesce(bare)
    return _rate(rig.watch.commands(bare, t0), n)


def _rate(execs: list[Exec], n: int) -> float:
    assert len(execs) == n, f"{len(execs)} commands started, expected {n}"
    return (n - 1) / ((execs[-1].ns - execs[0].ns) / 1e9)


def _memory(pid: int) -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in read_proc(pid, "status").splitlines())
    return {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM")}  # kB


# ---- quietness during a measured command -------------------------------------------------------

def quiet(rig: Rig, worker: int, bare: int, rounds: int, seconds: float) -> dict[str, Any]:
    """Every thread of each worker, sampled 1 s after its command started and 1 s before it
    ends: CPU time and run count from schedstat, context switches from status."""
    rows: dict[str, list[dict[str, Any]]] = {"benchfleet": [], "bare": []}
    argv: list[str] | None = None
    for r in range(rounds):
        for who in (("benchfleet", "bare") if r % 2 == 0 else ("bare", "benchfleet")):
            if who == "benchfleet":
                sweep_id, _, t0 = rig.submit(spin_spec(rig, seconds))
                started = rig.watch.wait_exec(worker, t0, 120.0,
                                              lambda e: bool(e.argv and "--seconds" in e.argv))
                rows[who].append(_window(worker, started, seconds))
                rig.wait_final(sweep_id)
                argv = argv or _measured_run(rig, sweep_id)["argv"]
                quiesce(worker)
            else:
                command = argv or [*_spin_argv(rig, seconds)]
                t0 = rig.send_bare(command)
                started = rig.watch.wait_exec(bare, t0, 120.0)
                rows[who].append(_window(bare, started, seconds))
                rig.watch.wait_exit(started.pid, seconds + 60)
                quiesce(bare)
    return {"seconds": seconds, "window_s": seconds - 2.0, "rounds": rows,
            **{who: _quiet_figures(r) for who, r in rows.items()}}


def _spin_argv(rig: Rig, seconds: float) -> list[str]:
    import sys

    return [sys.executable, str(HERE / "spin.py"), "--seconds", str(seconds)]


def _window(pid: int, started: Exec, seconds: float) -> dict[str, Any]:
    _sleep_until(started.ns + 1_000_000_000)
    # The worker's own processes beside it (benchfleet's watch, workers/deathwatch.py) count
    # as the worker: anything of theirs that wakes disturbs the measured command as much.
    own = [pid, *(c for c in _children(pid) if c != started.pid)]
    before = {tid: t for p in own for tid, t in threads(p).items()}
    _sleep_until(started.ns + int((seconds - 1.0) * 1e9))
    after = {tid: t for p in own for tid, t in threads(p).items()}
    per = {}
    for tid, a in after.items():
        b = before.get(tid, {k: 0 for k in a} | {"name": a["name"]})
        per[tid] = {"name": a["name"], **{k: a[k] - b[k] for k in a if k != "name"}}
    return {"threads": per, "thread_count": len(after),
            "wakeups": sum(t["runs"] for t in per.values()),
            "voluntary": sum(t["voluntary"] for t in per.values()),
            "nonvoluntary": sum(t["nonvoluntary"] for t in per.values()),
            "cpu_s": sum(t["cpu_ns"] for t in per.values()) / 1e9}


def _children(pid: int) -> list[int]:
    return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()]


def _quiet_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {k: spread([float(r[k]) for r in rows])
            for k in ("wakeups", "voluntary", "nonvoluntary", "cpu_s", "thread_count")}


def threads(pid: int) -> dict[str, dict[str, Any]]:
    """Per thread: name, CPU ns and run count (schedstat), context switches (status)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            cpu, _, runs = (int(v) for v in (task / "schedstat").read_text().split())
            status = dict(line.split(":", 1) for line in (task / "status").read_text()
                          .splitlines())
            name = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended meanwhile
        out[task.name] = {"name": name, "cpu_ns": cpu, "runs": runs,
                          "voluntary": int(status["voluntary_ctxt_switches"]),
                          "nonvoluntary": int(status["nonvoluntary_ctxt_switches"])}
    return out


def quiesce(pid: int, limit_s: float = 10.0) -> None:
    """Until no thread of `pid` has run for QUIET_S: the worker is back waiting for work."""
    end = time.monotonic() + limit_s
    last = _runs(pid)
    still = time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.02)
        now = _runs(pid)
        if now != last:
            last, still = now, time.monotonic()
        elif time.monotonic() - still >= QUIET_S:
            return


def _runs(pid: int) -> int:
    return sum(t["runs"] for t in threads(pid).values())


def _sleep_until(ns: int) -> None:
    time.sleep(max(0.0, (ns - time.monotonic_ns()) / 1e9))
