"""Reads what tests/targets/h200_check.sh left in its folder: per run, decode tok/s of the
unprofiled bench, and per kernel the launches and microseconds per decode token from the
difference of two cupti-kernsum tables (long minus short cancels load, warm-up and prefill).
Then checks the routed-expert kernels MLXCEL-FACTS.md names for each family and path.

    python tests/targets/kernel_deltas.py FOLDER LONG SHORT
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

# Substrings of the routed-expert kernel each (model, path) should launch at decode.
EXPECTED = {
    ("qwen3-30b-a3b-4bit", "gather"): ("qmm_sm80",),
    ("deepseek-v4-flash-4bit", "gather"): ("fp_gather_qmv", "gather_qmv"),
    ("qwen3-30b-a3b-4bit", "fused"): ("qmv",),
    ("deepseek-v4-flash-4bit", "fused"): ("qmv",),
}
GATHER_KERNELS = ("qmm_sm80", "gather_qmv")
SHOWN = 14


def table(path: Path) -> dict[str, tuple[int, int]]:
    """Kernel name -> (instances, total ns)."""
    with path.open(newline="") as f:
        return {r["Name"]: (int(r["Instances"]), int(r["Total Time (ns)"]))
                for r in csv.DictReader(f)}


def short(name: str) -> str:
    head = re.split(r"[<(]", name.removeprefix("void "), maxsplit=1)[0]
    return head.rsplit("::", 1)[-1]


def per_token(long: dict[str, tuple[int, int]], short_run: dict[str, tuple[int, int]],
              tokens: int) -> list[tuple[str, float, float]]:
    """(name, launches per token, microseconds per token), most time first."""
    rows = []
    for name in set(long) | set(short_run):
        (n1, t1), (n0, t0) = long.get(name, (0, 0)), short_run.get(name, (0, 0))
        rows.append((name, (n1 - n0) / tokens, (t1 - t0) / tokens / 1e3))
    return sorted(rows, key=lambda r: -r[2])


def decode_rate(text: str) -> tuple[float, float] | None:
    """(microseconds per generated token, tok/s) of a bench's report."""
    tokens = re.search(r"Generated tokens: (\d+)", text)
    decode = re.search(r"Decode:\s+([\d.]+) ms \(([\d.]+) tok/s\)", text)
    if not (tokens and decode and int(tokens[1])):
        return None
    return float(decode[1]) * 1e3 / int(tokens[1]), float(decode[2])


def report(folder: Path, run: str, long_n: int, short_n: int) -> list[str]:
    model, fused = run.rsplit(".fused", 1)
    path = "fused" if fused == "1" else "gather"
    bench = folder / f"{run}.bench.txt"
    lines = [f"== {model}, MLXCEL_FUSED_MOE={fused}"]
    text = bench.read_text() if bench.is_file() else ""
    lines += [line for line in text.splitlines() if line.startswith(("[mlxcel arch]",
                                                                     "[mlx_moe]", "Error"))]
    rate = decode_rate(text)
    if rate:
        lines.append(f"  unprofiled decode {rate[1]:.2f} tok/s = {rate[0]:.1f} us/token")
    tables = [folder / f"{run}.kern{n}.csv" for n in (long_n, short_n)]
    if not all(t.is_file() for t in tables):
        return [*lines, "  no kernel tables (see the profile logs)"]
    rows = per_token(table(tables[0]), table(tables[1]), long_n - short_n)
    kernel_us = sum(r[2] for r in rows)
    idle = f"; GPU idle {rate[0] - kernel_us:.1f} us/token" if rate else ""
    lines.append(f"  kernels {kernel_us:.1f} us/token{idle}")
    lines.append(f"  {'launches/tok':>12} {'us/tok':>9}  kernel")
    lines += [f"  {n:12.2f} {us:9.2f}  {short(name)}" for name, n, us in rows[:SHOWN]]
    lines.append(check(model, path, rows))
    return lines


def check(model: str, path: str, rows: list[tuple[str, float, float]]) -> str:
    wanted = EXPECTED.get((model, path))
    if wanted is None:
        return "  check: no expectation for this model"
    seen = [(short(name), n) for name, n, _ in rows if n >= 1 and any(w in name for w in wanted)]
    gathers = [short(name) for name, n, _ in rows if n >= 1
               and any(g in name for g in GATHER_KERNELS)]
    ok = bool(seen) and (path == "gather" or not gathers)
    verdict = "OK" if ok else "UNEXPECTED"
    return (f"  check {verdict}: wanted {' or '.join(wanted)} at decode; seen {seen}; "
            f"gather kernels per token {gathers}")


def main(argv: list[str]) -> int:
    folder, long_n, short_n = Path(argv[0]), int(argv[1]), int(argv[2])
    runs = sorted({p.name.split(".bench.txt")[0] for p in folder.glob("*.bench.txt")})
    for run in runs:
        print("\n".join(report(folder, run, long_n, short_n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
