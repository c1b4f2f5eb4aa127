"""Where the time goes: profiles of the worker and the CLI, on the benchmark's own rig.

Not timed figures (a profiler slows what it watches); they say which code the overhead is.
- worker: py-spy samples the `benchfleet worker` process (all its Python stacks, 500 Hz)
  while it runs no-op cells, then dispatch cells; strace -c counts its system calls;
- CLI: cProfile of `submit` and `status` at 10,000 cells and `record` at a few hundred (its
  cost grows with the square of the cells), in process; `-X importtime` of a `status`
  process for the start-up.
Writes docs/benchmarks/profiles/*.txt. Needs py-spy beside the venv's Python
(`.uv/bin/uv pip install --python .venv/bin/python py-spy`) and strace.
Run: .venv/bin/python -m tests.bench.profiles [worker|cli]   (both by default)
"""

import cProfile
import io
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from runner import cli
from runner.demo.local_fleet import settings_env
from runner.demo.redis_server import RedisServer
from tests.bench import cells, scale
from tests.bench.procwatch import watching
from tests.bench.rig import REPO, Rig

OUT = Path(__file__).parents[2] / "docs" / "benchmarks" / "profiles"
TOP = 35


def main() -> None:
    chosen = sys.argv[1:] or ["worker", "cli"]
    spy = Path(sys.executable).with_name("py-spy")
    if "worker" in chosen and (not spy.exists() or not shutil.which("strace")):
        sys.exit("profiles: the worker's need py-spy beside the venv's Python (.uv/bin/uv pip "
                 "install --python .venv/bin/python py-spy) and strace (apt-get install "
                 "strace); `cli` alone needs neither")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server, \
            watching() as watch:
        rig = Rig(Path(tmp), server, watch)
        try:
            if "worker" in chosen:
                worker_profiles(rig, spy)
            if "cli" in chosen:
                cli_profiles(rig)
        finally:
            rig.stop()


def worker_profiles(rig: Rig, spy: Path) -> None:
    worker = rig.worker("cpu", "bench-cpu")
    rig.wait_final(rig.submit(cells.noop_spec(rig, "cpu", 1))[0])
    rig.wait_final(rig.submit(cells.dispatch_spec(rig, rig.shas[-1]))[0])
    cells.quiesce(worker)

    def noop() -> None:
        rig.wait_final(rig.submit(cells.noop_spec(rig, "cpu", 100))[0])

    def dispatch() -> None:
        for _ in range(20):
            rig.wait_final(rig.submit(cells.dispatch_spec(rig, rig.shas[-1]))[0])

    for name, work in (("noop", noop), ("dispatch", dispatch)):
        raw = OUT / f".worker-{name}.raw"
        sampler = subprocess.Popen([str(spy), "record", "--pid", str(worker), "--rate", "500",
                                    "--format", "raw", "--output", str(raw), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attaches
        work()
        cells.quiesce(worker)
        sampler.send_signal(signal.SIGINT)
        sampler.wait(timeout=60)
        (OUT / f"worker-{name}.txt").write_text(collapsed(raw.read_text(), name))
        raw.unlink()
    trace = OUT / ".strace"
    tracer = subprocess.Popen(["strace", "-c", "-o", str(trace), "-p", str(worker)],
                              stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    noop()
    cells.quiesce(worker)
    tracer.send_signal(signal.SIGINT)
    tracer.wait(timeout=60)
    (OUT / "worker-noop-strace.txt").write_text(
        "System calls of the worker's own thread over 100 no-op cells (strace -c -p; its "
        "children not included).\n\n" + trace.read_text())
    trace.unlink()


def collapsed(text: str, what: str) -> str:
    """py-spy's collapsed stacks as two tables: where the samples are (self) and which
    functions they are under (inclusive), as a share of all samples."""
    own: Counter[str] = Counter()
    under: Counter[str] = Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_frame(f) for f in stack.split(";")[1:]]  # the first is the process
        total += n
        if frames:
            own[frames[-1]] += n
        for frame in set(frames):
            under[frame] += n
    lines = [f"py-spy, 500 Hz, worker running {what} cells: {total} samples while not idle.",
             "", "self % | function", "---|---"]
    lines += [f"{n * 100 / total:5.1f} | {f}" for f, n in own.most_common(TOP)]
    lines += ["", "inclusive % | function", "---|---"]
    lines += [f"{n * 100 / total:5.1f} | {f}" for f, n in under.most_common(TOP * 2)]
    return "\n".join(lines) + "\n"


def _frame(frame: str) -> str:
    """`function (path:line)` with the path cut to the project or the library."""
    for cut in (str(REPO) + "/", "site-packages/", "python3.11/"):
        if cut in frame:
            head, _, tail = frame.partition(" (")
            return f"{head} ({tail.split(cut, 1)[-1]}"
    return frame


def cli_profiles(rig: Rig) -> None:
    running = {key.split("/")[1] for key in rig.fleet.procs}
    for backend in ("cpu", "metal"):  # the seed sweep runs on both backends
        if backend not in running:
            rig.worker(backend, f"bench-{backend}")
    seed = scale.seeds(rig)
    rig.stop()
    os.environ.update(settings_env(rig.settings))
    shas = scale.commits(rig, 100)
    big = rig.sweep_file(scale.spec(rig, "big", shas))
    small = rig.sweep_file(scale.spec(rig, "small", shas[:3]))
    made = {}
    for name, path in (("big", big), ("small", small)):
        sweep_id, all_cells = scale.submit(path, rig.settings)
        scale.received(rig)
        scale.populate(rig, sweep_id, all_cells, seed)
        made[name] = sweep_id
    out = rig.root / "cli-out.txt"
    scale.in_process(["status", made["small"]], out)  # imports paid before profiling
    runs = {"cli-submit-10000": ["submit", "--again", "--wait-for-worker", str(big)],
            "cli-status-10000": ["status", made["big"]],
            "cli-record-300": ["record", made["small"], "-o", str(rig.root / "records")]}
    profile = cProfile.Profile()
    profile.enable()
    sweep_id, _ = scale.submit(big, rig.settings, again=True)  # made["big"] is in Redis
    profile.disable()
    scale.drop(rig, sweep_id)
    (OUT / "submit-call-10000.txt").write_text(_stats(profile, "submit", "runner.submit.submit"))
    for name, args in runs.items():
        profile = cProfile.Profile()
        profile.enable()
        text = scale.in_process(args, out)
        profile.disable()
        if args[0] == "submit":
            scale.drop(rig, text.split()[-1])
        (OUT / f"{name}.txt").write_text(_stats(profile, " ".join(args[:1])))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "runner.cli", "status",
                           made["small"]], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ})
    (OUT / "cli-status-imports.txt").write_text(imports(done.stderr))
    print(cli.__name__, "profiles written to", OUT)


def _stats(profile: cProfile.Profile, what: str, call: str = "") -> str:
    buffer = io.StringIO()
    stats = pstats.Stats(profile, stream=buffer)
    stats.sort_stats("cumulative").print_stats(TOP)
    stats.sort_stats("tottime").print_stats(TOP)
    text = buffer.getvalue().replace(str(REPO) + "/", "")
    whose = f"`{call}()`, the library call alone," if call else f"`benchfleet {what}`"
    return f"cProfile of {whose} in process (imports already paid).\n{text}"


def imports(stderr: str) -> str:
    """`-X importtime` of a `benchfleet status` process: the slowest imports of the first
    two levels, by cumulative time."""
    rows = []
    for line in stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2][1:]
            depth = len(name) - len(name.lstrip())
            rows.append((int(parts[1]), depth, name.strip()))
    top = sorted((r for r in rows if r[1] <= 2), reverse=True)[:TOP]
    body = "\n".join(f"{c / 1000:8.1f} | {'  ' * (d // 2)}{n}" for c, d, n in top)
    total = sum(c for c, d, _ in rows if d == 0)
    return ("`python -X importtime -m runner.cli status`: the slowest imports of the first two "
            f"levels by cumulative ms; all top-level imports together: {total / 1000:.0f} ms."
            f"\n\nms | module\n---|---\n{body}\n")


if __name__ == "__main__":
    main()
