"""A measured command for the benchmarks: spins for --seconds, prints mlxcel's results block,
and reports on stderr how much CPU its parent (the worker running it) used meanwhile."""

import argparse
import os
import time
from pathlib import Path


def parent_stat() -> list[str]:
    return Path(f"/proc/{os.getppid()}/stat").read_text().rsplit(")", 1)[1].split()


def parent_ticks() -> int:
    fields = parent_stat()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks


def wait_for_parent_to_block(limit_s: float = 1.0) -> None:
    """Start counting once the parent has finished starting us and sleeps in wait()."""
    end = time.perf_counter() + limit_s
    while parent_stat()[0] != "S" and time.perf_counter() < end:
        pass


def parent_threads() -> int:
    for line in Path(f"/proc/{os.getppid()}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=0.0)
    args = p.parse_args()
    wait_for_parent_to_block()
    before, start, spins = parent_ticks(), time.perf_counter(), 0
    while time.perf_counter() - start < args.seconds:
        spins += 1
    wall = max(time.perf_counter() - start, 1e-9)
    tick = os.sysconf("SC_CLK_TCK")
    print(f"parent_cpu_s={(parent_ticks() - before) / tick:.3f} parent_threads="
          f"{parent_threads()} wall_s={wall:.3f}", file=__import__("sys").stderr)
    print("[Profile Results]")
    print("  Prompt tokens:    1")
    print("  Generated tokens: 1")
    print(f"  Prefill:          {wall * 1e3:.2f} ms ({1 / wall:.2f} tok/s)")
    print(f"  Decode:           {wall * 1e3:.2f} ms ({spins / wall:.2f} tok/s)")
    print("  MLX peak memory:  0.00 GB")


if __name__ == "__main__":
    main()
