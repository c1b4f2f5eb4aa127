#!/usr/bin/env python3
"""The mlx-lm / mlx-vlm baseline driver: each model runs in a child `python -c` whose output the
driver keeps to itself; progress goes to stderr and the result is one CSV row per model under
./benchmarks/. The child here is this tree's plain decoder (decoder/pylm.py)."""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TREE))

from decoder.config import ConfigError, load_config, weight_bytes  # noqa: E402

HEADER = ["model", "model_path", "prompt_tokens", "generated_tokens", "prefill_ms",
          "prefill_tok_s", "decode_ms", "decode_tok_s", "date", "hardware", "baseline_version",
          "build_type", "max_tokens", "prompt"]
CHILD = ("import sys; sys.path.insert(0, {tree!r}); from decoder.pylm import main; "
         "sys.exit(main(sys.argv[1:]))")
# Models at least this large get --big-cooldown after them instead of --cooldown.
BIG_MODEL_GB = 40.0


def main(argv: list[str] | None = None) -> int:
    args = options().parse_args(argv)
    if args.target == "all":
        models_dir = Path(os.environ.get("MODELS_DIR", "./models"))
        models = sorted(p for p in models_dir.iterdir() if (p / "config.json").is_file()) \
            if models_dir.is_dir() else []
    else:
        models = [Path(args.target)]
        if not models[0].is_dir():
            print(f"Error: {args.target} is not a directory", file=sys.stderr)
            return 1
    table = csv_path(args, single=None if args.target == "all" else models[0].name)
    done = finished_models(table)
    for i, model in enumerate(models, 1):
        if model.name in done:
            print(f"[skip-done] {model.name}", file=sys.stderr)
            continue
        size_gb = model_gb(model)
        print(f">>> [{i}/{len(models)}] [warmup+bench] {model.name} ({size_gb:.1f} GB) ...",
              file=sys.stderr, flush=True)
        append_row(table, bench_one(args, model, size_gb))
        if i < len(models):
            time.sleep(args.big_cooldown if size_gb >= BIG_MODEL_GB else args.cooldown)
    return 0


def options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench_mlxlm.py")
    p.add_argument("target", help="all, or one model directory (models/<dir>)")
    p.add_argument("--vlm", action="store_true", help="mlx-vlm mode: the fixed image prompt")
    p.add_argument("--image", default="tests/fixtures/test_image.png")
    p.add_argument("--cooldown", type=float, default=30)
    p.add_argument("--big-cooldown", type=float, default=30)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--warmup-tokens", type=int, default=20)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--suffix", default="")
    return p


def csv_path(args: argparse.Namespace, single: str | None) -> Path:
    name = f"pylm_{hardware()}{'_vlm' if args.vlm else ''}_{datetime.date.today().isoformat()}"
    name += f"_{args.suffix}" if args.suffix else ""
    name += f"_single_{single}" if single else ""
    return Path("benchmarks") / f"{name}.csv"


def hardware() -> str:
    """`m3ultra` on an Apple M3 Ultra, `unknown` elsewhere."""
    if platform.system() != "Darwin":
        return "unknown"
    brand = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                           text=True).stdout.strip().lower()
    return brand.removeprefix("apple ").replace(" ", "") or "unknown"


def finished_models(table: Path) -> set[str]:
    if not table.is_file():
        return set()
    with table.open(newline="") as f:
        return {row[0] for row in csv.reader(f) if row and row[0] != "model"}


def model_gb(model: Path) -> float:
    try:
        return weight_bytes(load_config(model)) / 1e9
    except ConfigError:
        return 0.0  # the child will say what is wrong


def bench_one(args: argparse.Namespace, model: Path, size_gb: float) -> list[str]:
    limit = os.environ.get("PYLM_BENCH_MAX_GB")
    if limit and size_gb > float(limit):
        print(f"    SKIP:oom_estimate ({size_gb:.1f} GB > {float(limit):.1f} GB)", file=sys.stderr)
        return failed_row(args, model, "SKIP:oom_estimate")
    python = os.environ.get("MLXLM_PYTHON") or sys.executable
    command = [python, "-c", CHILD.format(tree=str(TREE)), str(model), "--max-tokens",
               str(args.max_tokens), "--warmup-tokens", str(args.warmup_tokens),
               "--image", args.image, *(["--vlm"] if args.vlm else [])]
    start = time.perf_counter()
    try:
        child = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return fail(args, model, "timeout", start)
    output = child.stdout + child.stderr
    result = next((line[len("RESULT "):] for line in child.stdout.splitlines()
                   if line.startswith("RESULT ")), None)
    if child.returncode != 0:
        kind = next((k for k in ("warmup", "bench") if f"ERROR {k}:" in output), "exit")
        return fail(args, model, kind, start)
    if not output.strip():
        return fail(args, model, "no_output", start)
    if result is None:
        return fail(args, model, "no_result", start)
    figures = json.loads(result)
    print(f"    decode: {figures['decode_tps']:.2f} tok/s ({time.perf_counter() - start:.1f}s)",
          file=sys.stderr)
    return measured_row(args, model, figures)


def fail(args: argparse.Namespace, model: Path, kind: str, start: float) -> list[str]:
    print(f"    FAIL:{kind} ({time.perf_counter() - start:.1f}s)", file=sys.stderr)
    return failed_row(args, model, f"FAIL:{kind}")


def measured_row(args: argparse.Namespace, model: Path, r: dict[str, float]) -> list[str]:
    prompt, generated = int(r["prompt_tokens"]), int(r["gen_tokens"])
    prefill_tps, decode_tps = float(r["prefill_tps"]), float(r["decode_tps"])
    figures = [str(prompt), str(generated), f"{prompt / prefill_tps * 1e3:.2f}",
               f"{prefill_tps:.2f}", f"{generated / decode_tps * 1e3 if decode_tps else 0:.2f}",
               f"{decode_tps:.2f}"]
    return [model.name, str(model), *figures, *context(args)]


def failed_row(args: argparse.Namespace, model: Path, reason: str) -> list[str]:
    return [model.name, str(model), "", "", "", "", "", "", *context(args), reason]


def context(args: argparse.Namespace) -> list[str]:
    try:
        mlx = version("mlx")
    except PackageNotFoundError:
        mlx = "unknown"
    kind = "vlm" if args.vlm else "lm"
    return [datetime.date.today().isoformat(), hardware(), f"mlx-{kind}-standin-mlx{mlx}",
            "python", str(args.max_tokens), "image" if args.vlm else "long-512"]


def append_row(table: Path, row: list[str]) -> None:
    table.parent.mkdir(parents=True, exist_ok=True)
    new = not table.is_file()
    with table.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(HEADER)
        writer.writerow(row)


if __name__ == "__main__":
    sys.exit(main())
