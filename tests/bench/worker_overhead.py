"""Benchmark: what benchfleet costs per cell, and how quiet its worker is while one runs.

Both against bare Celery on the same private Redis, in the same run:
- overhead: N cells of a command that exits at once, submitted together, one solo worker;
  seconds per cell from submit to the last one done (benchfleet: state, checkout, cached build,
  parse, sha256 artifacts; bare: a task that runs the command and returns its exit code);
- quietness: while a command spins for S seconds, the CPU time its parent (the worker
  process) uses, and that process's thread count.
Writes docs/benchmarks/worker-overhead.{md,json}.
Run: .venv/bin/python -m tests.bench.worker_overhead
"""

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from jobs.attempts import FINAL
from runner.local_fleet import LocalFleet
from runner.redis_server import RedisServer
from runner.submit import submit
from runner.target import DEMO_MODELS, make_models, make_target_repo
from workers.fleet.artifacts import LocalStore
from workers.fleet.settings import Settings
from workers.fleet.state import Store

HERE = Path(__file__).parent
OUT = HERE.parents[1] / "docs" / "benchmarks"
CELLS, ROUNDS, SPIN_S = 20, 3, 3.0
_PARENT = re.compile(r"parent_cpu_s=([0-9.]+) parent_threads=([0-9]+)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
        root = Path(tmp)
        make_target_repo(root / "target")
        make_models(root / "models", DEMO_MODELS)
        settings = Settings(redis_url=server.url, artifacts=root / "artifacts",
                            workspace=root / "workspace", models_dir=root / "models",
                            catalogue=HERE / "catalogue.yaml",
                            allowed_repos=[str(root / "target")])
        fleet = LocalFleet(settings, root / "logs")
        fleet.start("cpu", "bench")
        bare = start_bare(server.url, root)
        try:
            results = measure(settings, server.url, root)
        finally:
            fleet.stop()
            bare.terminate()
            bare.wait(timeout=30)
    write(results)


def measure(settings: Settings, url: str, root: Path) -> dict[str, object]:
    os.environ["BARE_REDIS_URL"] = url
    from tests.bench.bare_worker import app

    ours, theirs = [], []
    sweep_cells(settings, root, 1, 0.0)  # the first cell clones and builds: not counted
    for _ in range(ROUNDS):
        ours.append(sweep_cells(settings, root, CELLS, 0.0)[0] / CELLS)
        theirs.append(bare_cells(app, CELLS, 0.0)[0] / CELLS)
    _, stderrs = sweep_cells(settings, root, 1, SPIN_S)
    _, bare_stderr = bare_cells(app, 1, SPIN_S)
    quiet_ours = [float(v) for v in _PARENT.search(stderrs[0]).groups()]  # type: ignore[union-attr]
    quiet_bare = [float(v) for v in _PARENT.search(bare_stderr[0]).groups()]  # type: ignore[union-attr]
    return {"cells": CELLS, "rounds": ROUNDS, "spin_s": SPIN_S,
            "benchfleet_s_per_cell": ours, "bare_celery_s_per_cell": theirs,
            "worker_cpu_s_during_spin": {"benchfleet": quiet_ours[0], "bare": quiet_bare[0]},
            "worker_threads": {"benchfleet": int(quiet_ours[1]), "bare": int(quiet_bare[1])}}


def sweep_cells(settings: Settings, root: Path, n: int, spin: float) -> tuple[float, list[str]]:
    spec = {"name": "bench", "target": {"repo": str(root / "target"), "commits": "main"},
            "models": ["tinymoe-a3"], "backends": {"cpu": {"build": "noop-build"}},
            "arms": [{"name": "probe", "recipe": "probe", "baseline": True,
                      "params": {"probe": str(HERE / "probe.py"), "seconds": spin}}],
            "n": n, "warmup": 0}
    path = root / f"bench-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    store = Store.connect(settings.redis_url)
    start = time.perf_counter()
    sweep_id, cells = submit(path, settings)
    events = store.events(sweep_id, timeout_s=1.0)
    while sum(s.status in FINAL for s in store.states(sweep_id).values()) < n:
        next(events)
    elapsed = time.perf_counter() - start
    events.close()
    states = store.states(sweep_id)
    assert all(s.status == "done" for s in states.values()), states
    artifacts = LocalStore(settings.artifacts)
    stderrs = [artifacts.read(sweep_id, c.id, 1)["measure.stderr.txt"].read_text() for c in cells]
    return elapsed, stderrs


def bare_cells(app: object, n: int, spin: float) -> tuple[float, list[str]]:
    argv = [sys.executable, str(HERE / "probe.py"), "--seconds", str(spin)]
    start = time.perf_counter()
    pending = [app.send_task("bare.run", args=[argv], queue="bare")  # type: ignore[attr-defined]
               for _ in range(n)]
    outputs = [p.get(timeout=300) for p in pending]
    return time.perf_counter() - start, [stderr for _, stderr in outputs]


def start_bare(url: str, root: Path) -> subprocess.Popen[bytes]:
    log = (root / "bare.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.bench.bare_worker", "worker", "-P", "solo",
         "-c", "1", "-Q", "bare", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "-l", "WARNING"], env={**os.environ, "BARE_REDIS_URL": url},
        stdout=log, stderr=subprocess.STDOUT, cwd=HERE.parents[1])


def fmt(xs: list[float]) -> str:
    return f"{statistics.mean(xs) * 1e3:.0f} ms ({min(xs) * 1e3:.0f} to {max(xs) * 1e3:.0f})"


def write(r: dict[str, object]) -> None:
    ours, theirs = r["benchfleet_s_per_cell"], r["bare_celery_s_per_cell"]
    m_ours, m_bare = statistics.mean(ours), statistics.mean(theirs)  # type: ignore[arg-type]
    cpu, threads = r["worker_cpu_s_during_spin"], r["worker_threads"]
    r.update({"date": datetime.now(UTC).isoformat(timespec="seconds"),
              "host": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
                      f"Python {platform.python_version()}",
              "ratio_mean": m_ours / m_bare})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "worker-overhead.json").write_text(json.dumps(r, indent=1) + "\n")
    (OUT / "worker-overhead.md").write_text(f"""# Worker overhead and quietness

Measured {r['date']} on {r['host']} by `.venv/bin/python -m tests.bench.worker_overhead`
(`tests/bench/worker_overhead.py`). Baseline: bare Celery (one task running the same command
with `subprocess.run`, solo pool, prefetch 1, acks late) on the same private redis-server, in the
same run. Raw figures: `worker-overhead.json`.

## Cost per cell
{r['cells']} cells of a command that exits at once, submitted together to one worker, timed from
submit to the last cell done; {r['rounds']} rounds, `mean (min to max)` over rounds.

| | seconds per cell | vs bare Celery |
|---|---|---|
| bare Celery | {fmt(theirs)} | 1.00 |
| benchfleet | {fmt(ours)} | {r['ratio_mean']:.2f}x |

benchfleet's extra work per cell: cell state in Redis and its event, a git rev-parse of the
pinned commit, the cached-build lookup under a host lock, the MLX-pin probe, writing every log
and the result to a staging directory, sha256 over each file, one rename.

## Quietness while a benchmark runs
The command spins for {r['spin_s']:g} s and reads its parent's (the worker process's) CPU time
from `/proc` at its start and end.

| | worker CPU during the run | worker threads |
|---|---|---|
| bare Celery (solo, no heartbeat/gossip/mingle) | {cpu['bare']:.3f} s | {threads['bare']} |
| benchfleet worker | {cpu['benchfleet']:.3f} s | {threads['benchfleet']} |

CPU time is counted in clock ticks (1/{os.sysconf('SC_CLK_TCK')} s): 0.000 means under one tick.
""")
    print((OUT / "worker-overhead.md").read_text())


if __name__ == "__main__":
    main()
