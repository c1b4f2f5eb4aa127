"""Benchmark: what benchfleet costs around a measurement, against bare Celery and minimal
baselines measured in the same run, on the same private Redis, interleaved and repeated.

Blocks (each reports load1 before and after):
- dispatch: dispatch → command start with the shipped catalogue (mlxcel-bench-decode with its
  flag probe, tinymoe-build, the MLX-pin and other provenance probes), on a sha and on a
  branch, against a bare Celery task spawning the same command;
- throughput: cells per second of a command that exits at once, and worker memory after
  them, against bare Celery running the same command;
- memory: each worker's RSS over 10,000 more no-op cells (flat is the goal: bare Celery's);
- quiet: every worker thread's CPU time, run count and context switches while a measured
  command runs for 30 s;
- scale: submit, status and record at 1,000 to 100,000 cells against a minimal script doing
  the same work (tests/bench/minimal.py), a raw Redis pipeline and Celery's send_task; the
  record's peak memory against the minimal reader's;
- floors: a Redis round trip, a script call, an Ed25519 signature, fork+exec of `true`,
  `python -c pass`, and `benchfleet --version` against `python -c pass`; the libraries'
  imports, their time and the peak memory they alone hold.
Writes docs/benchmarks/overhead.{md,json}. Linux, as root (the kernel's process events).
Run: .venv/bin/python -m tests.bench.overhead [--help for repeat counts and blocks]
"""

import argparse
import os
import platform
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.demo.redis_server import RedisServer
from tests.bench import cells, floors, scale
from tests.bench.figures import block
from tests.bench.procwatch import watching
from tests.bench.report import write
from tests.bench.rig import Rig

OUT = Path(__file__).parents[2] / "docs" / "benchmarks"
BLOCKS = ("dispatch", "throughput", "memory", "quiet", "scale", "floors")


def arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tests.bench.overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=30, help="dispatches per contestant")
    p.add_argument("--noop-rounds", type=int, default=5, help="throughput rounds")
    p.add_argument("--noop-cells", type=int, default=100, help="cells per throughput round "
                   "(at most 100; rounds x cells is the cell count memory is read after)")
    p.add_argument("--memory-cells", type=int, default=10000,
                   help="no-op cells the memory block runs, a multiple of 100")
    p.add_argument("--quiet-rounds", type=int, default=3)
    p.add_argument("--quiet-seconds", type=float, default=30.0)
    p.add_argument("--scale-rounds", type=int, default=3)
    p.add_argument("--floor-repeats", type=int, default=200)
    p.add_argument("--sizes", default="1000,10000,100000", help="cell counts, multiples of "
                   f"{scale.PER_COMMIT}")
    p.add_argument("--record-limit", type=float, default=300.0,
                   help="seconds one `benchfleet record` may take before it is stopped")
    p.add_argument("--blocks", default=",".join(BLOCKS), help="which blocks to run")
    p.add_argument("--out", type=Path, default=OUT)
    return p.parse_args()


def main() -> None:
    args = arguments()
    chosen = args.blocks.split(",")
    results: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                               "host": host(), "arguments": {k: str(v) for k, v in
                                                             vars(args).items()}}
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server, \
            watching() as watch:
        rig = Rig(Path(tmp), server, watch)
        try:
            run(rig, args, chosen, results)
        finally:  # the blocks that ended are written even when a later one failed
            rig.stop()
            results["process_events_lost"] = watch.lost
            write(results, args.out)


def run(rig: Rig, args: argparse.Namespace, chosen: list[str], results: dict[str, Any]) -> None:
    worker, bare = rig.worker("cpu", "bench-cpu"), rig.bare_worker()
    if "dispatch" in chosen:
        with block(results, "dispatch") as out:
            out.update(cells.dispatch(rig, worker, bare, args.rounds))
    # One no-op worker serves the metal queue for every block that needs one: a second
    # would take half the cells meant for the one being watched.
    noop: list[int] = []

    def noop_worker() -> int:
        noop[:] = noop or [rig.worker("metal", "bench-metal")]
        return noop[0]

    if "throughput" in chosen:
        noop_bare, stored_bare = rig.bare_worker("bare-noop"), rig.bare_worker("bare-stored")
        with block(results, "throughput") as out:
            out.update(cells.throughput(rig, noop_worker(), noop_bare, "metal", "bare-noop",
                                        args.noop_rounds, args.noop_cells,
                                        (stored_bare, "bare-stored")))
    if "memory" in chosen:
        memory_bare = rig.bare_worker("bare-memory")
        with block(results, "memory") as out:
            out.update(cells.memory(rig, noop_worker(), memory_bare, "metal", "bare-memory",
                                    args.memory_cells))
    if "quiet" in chosen:
        with block(results, "quiet") as out:
            out.update(cells.quiet(rig, worker, bare, args.quiet_rounds, args.quiet_seconds))
    if "scale" in chosen:
        noop_worker()
        with block(results, "scale") as out:
            sizes = [int(s) for s in args.sizes.split(",")]
            out.update(scale.scale(rig, sizes, args.scale_rounds, args.record_limit))
    if "floors" in chosen:
        with block(results, "floors") as out:
            out["seconds"] = floors.measure(args.floor_repeats)
            out["version_ratio"] = floors.version_ratio(out["seconds"])
            try:  # GNU time reads them; without it the block keeps what it measured
                out["import_peak_kib"] = floors.import_peaks()
            except (OSError, subprocess.CalledProcessError, ValueError) as error:
                out["import_peak_kib_error"] = str(error)


def host() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return (f"{platform.node()} {platform.machine()} ({cpu}), {os.cpu_count()} cores, "
            f"Linux {platform.release()}, Python {platform.python_version()}")


if __name__ == "__main__":
    main()
