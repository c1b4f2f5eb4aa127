"""The floor under benchfleet's figures on this machine: what one Redis round trip, one
Ed25519 signature, a fork and exec of `true` and a bare Python start cost, and `benchfleet
--version` against `python -c pass` (issue 17's start-up goal). Medians (min to max) of
interleaved repeats, each against a private redis-server.

Run: .venv/bin/python -m tests.bench.floors [--repeats 200]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import redis

from runner.demo.redis_server import RedisServer
from workers.shared.signing import generate, signer

ENVELOPE = b"x" * 1500  # about one cell's envelope


def timings(contestants: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[float]]:
    """Seconds per call of each contestant, the order rotated every repeat."""
    names = list(contestants)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            start = time.perf_counter()
            contestants[name]()
            out[name].append(time.perf_counter() - start)
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tests.bench.floors", description=__doc__)
    p.add_argument("--repeats", type=int, default=200, help="of the in-process figures; a "
                   "tenth as many of the process starts")
    args = p.parse_args()
    exe = Path(sys.executable).with_name("benchfleet")
    with tempfile.TemporaryDirectory() as tmp, RedisServer(Path(tmp) / "redis") as server:
        client = redis.Redis.from_url(server.url)
        script = client.register_script("return 1")
        generate(Path(tmp) / "k.pem", Path(tmp) / "k.pub")
        key = signer(Path(tmp) / "k.pem")
        client.ping()
        script()
        fast = timings({"Redis round trip (PING)": client.ping,
                        "Redis script call (EVALSHA of `return 1`)": script,
                        "Ed25519 signature of 1.5 kB": lambda: key.sign(ENVELOPE)},
                       args.repeats)
    starts = timings({"fork+exec of `true`": lambda: subprocess.run(["true"], check=True),
                      "`python -c pass`": lambda: subprocess.run([sys.executable, "-c", "pass"],
                                                                 check=True),
                      "`benchfleet --version`": lambda: subprocess.run(
                          [str(exe), "--version"], check=True, stdout=subprocess.DEVNULL)},
                     max(3, args.repeats // 10))
    print(f"load1 {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores\n")
    print("| floor | median | min to max |\n|---|---|---|")
    for name, xs in {**fast, **starts}.items():
        print(f"| {name} | {_ms(statistics.median(xs))} | {_ms(min(xs))} to {_ms(max(xs))} |")
    version = [a / b for a, b in zip(starts["`benchfleet --version`"],
                                      starts["`python -c pass`"], strict=True)]
    print(f"\n`benchfleet --version` / `python -c pass`, per round: "
          f"{statistics.median(version):.2f}x ({min(version):.2f} to {max(version):.2f})")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


if __name__ == "__main__":
    main()
