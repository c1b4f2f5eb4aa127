"""The mlx-lm / mlx-vlm baseline driver for tinymoe, with mlxcel's scripts/bench_mlxlm.py surface.

`bench_mlxlm.py all|models/<dir> [--vlm] ...`: each model runs in a child `python -c` that
prints `RESULT {json}`; the driver keeps the child's output (its own stdout carries nothing),
prints progress on stderr and appends one row per model to
`./benchmarks/pylm_<hw>[_vlm]_<date>[_<suffix>][_single_<model>].csv`. It exits 0 even when
the model failed (the row says how), skips a model already in that day's CSV (`[skip-done]`),
and exits 1 with `Error: <path> is not a directory` for a single model path that is not one.
"""

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

HEADER = ["model", "model_path", "prompt_tokens", "generated_tokens", "prefill_ms",
          "prefill_tok_s", "decode_ms", "decode_tok_s", "date", "hardware", "baseline_version",
          "build_type", "max_tokens", "prompt"]
PROMPT_TOKENS = 512
VLM_PROMPT = "What is in this image?"
VLM_IMAGE = "tests/fixtures/test_image.png"
VERSION = "0.0+tinymoe"
# The child: tinymoe's batched-expert path standing for mlx-lm. argv: src model max warmup vlm
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, tinymoe
model_dir, max_tokens, warmup = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
vlm = sys.argv[5] == "1"
stage = "warmup"
try:
    model = tinymoe.Model(__import__("pathlib").Path(model_dir), "float32")
    model.moe_path = "batched"
    prompt = np.arange(6 + 64 if vlm else 512) % model.vocab
    def run(count):
        cache = model.new_cache()
        start = time.perf_counter()
        token = int(np.argmax(model.forward(prompt, cache)))
        prefill = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(max(count - 1, 0)):
            token = int(np.argmax(model.forward(np.array([token]), cache)))
        return prefill, max(time.perf_counter() - start, 1e-9)
    run(warmup)
    stage = "bench"
    prefill, decode = run(max_tokens)
except Exception as error:
    print(f"{stage} failed: {type(error).__name__}: {error}", file=sys.stderr)
    print(f"ERROR {stage}", file=sys.stderr)
    sys.exit(3 if stage == "warmup" else 4)
result = {"prompt_tokens": len(prompt), "prefill_tps": round(len(prompt) / prefill, 2),
          "gen_tokens": max_tokens, "decode_tps": round(max(max_tokens - 1, 1) / decode, 2)}
if not vlm:
    result["finish_reason"] = "length"
print("RESULT " + json.dumps(result))
"""


def main() -> int:
    args = parse_args()
    models_dir = Path(os.environ.get("MODELS_DIR", "./models"))
    if args.target == "all":
        models = sorted(d for d in models_dir.iterdir() if d.is_dir())
    else:
        models = [Path(args.target)]  # taken as given, not looked up in MODELS_DIR
        if not models[0].is_dir():
            print(f"Error: {args.target} is not a directory", file=sys.stderr)
            return 1
    out = csv_path(args, models[0].name if args.target != "all" else None)
    done = already_done(out)
    for i, model in enumerate(models):
        if model.name in done:
            print(f"[skip-done] {model.name}", file=sys.stderr)
            continue
        if i and args.cooldown:
            time.sleep(args.cooldown)  # the real driver's cool-down between models
        append(out, row(args, model, *bench(args, model, i + 1, len(models))))
    return 0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench_mlxlm.py")
    p.add_argument("target", help="all, or one model directory")
    p.add_argument("--vlm", action="store_true")
    p.add_argument("--image")
    p.add_argument("--cooldown", type=int, default=30)
    p.add_argument("--big-cooldown", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--warmup-tokens", type=int, default=20)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--suffix", default="")
    return p.parse_args()


def bench(args: argparse.Namespace, model: Path, i: int, n: int) -> tuple[dict, str]:
    """The child's RESULT, or the FAIL:/SKIP: field that stands for it."""
    size = size_gb(model)
    print(f">>> [{i}/{n}] [warmup+bench] {model.name} ({size:.1f} GB) ...", file=sys.stderr)
    limit = os.environ.get("PYLM_BENCH_MAX_GB")
    if limit and size > float(limit):
        print(f"    SKIP:oom_estimate ({size:.1f} GB > {float(limit):.1f} GB)", file=sys.stderr)
        return {}, "SKIP:oom_estimate"
    if args.vlm and not Path(args.image or VLM_IMAGE).is_file():
        print(f"    FAIL:exit (image {args.image or VLM_IMAGE} not found)", file=sys.stderr)
        return {}, "FAIL:exit"
    python = os.environ.get("MLXLM_PYTHON", sys.executable)
    src = str(Path(__file__).resolve().parents[1] / "src")
    start = time.perf_counter()
    try:
        child = subprocess.run([python, "-c", CHILD, src, str(model), str(args.max_tokens),
                                str(args.warmup_tokens), "1" if args.vlm else "0"],
                               capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return _failed("timeout", start)
    took = time.perf_counter() - start
    results = [line for line in child.stdout.splitlines() if line.startswith("RESULT ")]
    if child.returncode:
        stage = next((s for s in ("warmup", "bench") if f"ERROR {s}" in child.stderr), "exit")
        return _failed(stage, start)
    if not child.stdout.strip():
        return _failed("no_output", start)
    if not results:
        return _failed("no_result", start)
    result = json.loads(results[0][len("RESULT "):])
    print(f"    decode: {result['decode_tps']:.2f} tok/s ({took:.1f}s)", file=sys.stderr)
    return result, ""


def _failed(kind: str, start: float) -> tuple[dict, str]:
    print(f"    FAIL:{kind} ({time.perf_counter() - start:.1f}s)", file=sys.stderr)
    return {}, f"FAIL:{kind}"


def row(args: argparse.Namespace, model: Path, result: dict, status: str) -> list[str]:
    figures = ["", "", "", "", "", ""]
    if result:
        prompt, gen = result["prompt_tokens"], result["gen_tokens"]
        figures = [str(prompt), str(gen), f"{prompt / result['prefill_tps'] * 1e3:.2f}",
                   f"{result['prefill_tps']:.2f}",
                   f"{max(gen - 1, 1) / result['decode_tps'] * 1e3:.2f}",
                   f"{result['decode_tps']:.2f}"]
    flavour = "mlx-vlm" if args.vlm else "mlx-lm"
    fields = [model.name, str(model), *figures, date.today().isoformat(), hardware(),
              f"{flavour}-{VERSION}", "release", str(args.max_tokens),
              VLM_PROMPT if args.vlm else f"deterministic-{PROMPT_TOKENS}"]
    return fields + [status] if status else fields


def csv_path(args: argparse.Namespace, single: str | None) -> Path:
    name = f"pylm_{hardware()}{'_vlm' if args.vlm else ''}_{date.today().isoformat()}"
    name += f"_{args.suffix}" if args.suffix else ""
    name += f"_single_{single}" if single else ""
    return Path("benchmarks") / f"{name}.csv"


def already_done(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    with path.open(newline="") as f:
        return {r[0] for r in list(csv.reader(f))[1:] if r}


def append(path: Path, fields: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file()
    with path.open("a", newline="") as f:
        writer = csv.writer(f)
        if new:
            writer.writerow(HEADER)
        writer.writerow(fields)


def hardware() -> str:
    """`m3ultra` on an M3 Ultra Mac, `unknown` elsewhere, as the real driver names hosts."""
    if sys.platform != "darwin":
        return "unknown"
    brand = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                           text=True).stdout
    return brand.replace("Apple", "").replace(" ", "").strip().lower() or platform.machine()


def size_gb(model: Path) -> float:
    """The checkpoint's weights in GB: tinymoe draws them at load, so count them from config."""
    c = json.loads((model / "config.json").read_text())
    experts = c["experts"] * 2 * c["hidden"] * c["expert_width"]
    per_layer = 4 * c["hidden"] ** 2 + c["hidden"] * c["experts"] + experts
    return (c["layers"] * per_layer + 2 * c.get("vocab", 512) * c["hidden"]) * 4 / 1e9


if __name__ == "__main__":
    sys.exit(main())
