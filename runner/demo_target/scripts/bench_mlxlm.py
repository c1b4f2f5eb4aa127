"""The mlx-lm / mlx-vlm baseline for tinymoe: each model in a subprocess, one RESULT line.

Same surface as mlxcel's scripts/bench_mlxlm.py: `all|models/<dir>`, MODELS_DIR,
MLXLM_PYTHON, a fixed 512-token prompt, `ERROR <stage>` with exit codes 2-6 on failure.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

PROMPT_TOKENS = 512
EXIT = {"load": 2, "warmup": 3, "bench": 4, "no_output": 5, "no_eos_ids": 6}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("target")
    p.add_argument("--vlm", action="store_true")
    p.add_argument("--image")
    p.add_argument("--cooldown", type=int, default=30)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--warmup-tokens", type=int, default=20)
    p.add_argument("--timeout", type=int, default=600)
    p.add_argument("--suffix", default="")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(Path(args.child), args)
    models_dir = Path(os.environ.get("MODELS_DIR", "./models"))
    names = (sorted(d.name for d in models_dir.iterdir() if d.is_dir())
             if args.target == "all" else [Path(args.target).name])
    rows, code = [], 0
    for i, name in enumerate(names):
        if i and args.cooldown:
            time.sleep(args.cooldown)  # the real script's cool-down between models
        python = os.environ.get("MLXLM_PYTHON", sys.executable)
        try:
            done = subprocess.run([python, __file__, args.target, "--child",
                                   str(models_dir / name), "--max-tokens", str(args.max_tokens),
                                   "--warmup-tokens", str(args.warmup_tokens)],
                                  capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print("ERROR bench", file=sys.stderr)
            return EXIT["bench"]
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode:
            code = done.returncode
        elif not results:
            print("ERROR no_output", file=sys.stderr)
            code = EXIT["no_output"]
        else:
            rows.append({"model": name, **json.loads(results[0][len("RESULT "):])})
    write_csv(rows, args.suffix)
    return code


def child(model_dir: Path, args: argparse.Namespace) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import numpy as np
    import tinymoe

    try:
        model = tinymoe.Model(model_dir, "float32")
    except OSError as error:
        print(f"cannot load {model_dir}: {error}", file=sys.stderr)
        print("ERROR load", file=sys.stderr)
        return EXIT["load"]
    model.moe_path = "batched"
    prompt = np.arange(PROMPT_TOKENS) % model.vocab
    run(model, prompt, args.warmup_tokens)
    prefill_s, decode_s = run(model, prompt, args.max_tokens)
    result = {"prompt_tokens": PROMPT_TOKENS, "prefill_tps": round(PROMPT_TOKENS / prefill_s, 2),
              "gen_tokens": args.max_tokens,
              "decode_tps": round(max(args.max_tokens - 1, 1) / decode_s, 2),
              "finish_reason": "length"}
    print(f"RESULT {json.dumps(result)}")
    return 0


def run(model, prompt, count):
    import numpy as np

    cache = model.new_cache()
    start = time.perf_counter()
    token = int(np.argmax(model.forward(prompt, cache)))
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(max(count - 1, 0)):
        token = int(np.argmax(model.forward(np.array([token]), cache)))
    return prefill, max(time.perf_counter() - start, 1e-9)


def write_csv(rows: list[dict], suffix: str) -> None:
    if not rows:
        return
    out = Path("benchmarks")
    out.mkdir(exist_ok=True)
    with (out / f"mlxlm{suffix}.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
