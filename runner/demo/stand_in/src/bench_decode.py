"""mlxcel-bench-decode for tinymoe: prefill a prompt, decode tokens, print the timings."""

import argparse
import itertools
import os
import resource
import sys
import time
from pathlib import Path

import build_info
import kernels
import numpy as np
import tinymoe

BOLD, RESET = "\x1b[1m", "\x1b[0m"


def main() -> int:
    args = parse_args()
    path = Path(args.model)
    if not (path / "config.json").is_file():
        print(f"Error: failed to load model: {path}: no config.json", file=sys.stderr)
        return 1
    build = {"backend": build_info.BACKEND, "cuda_arch": build_info.CUDA_ARCH,
             "dtype": build_info.DTYPE}
    kernels.setup(build["backend"])
    print(f"[tinymoe] numpy {np.__version__} on the CPU, standing for {build['backend']}",
          file=sys.stderr)  # a backend's own device line, as mlxcel's backends print
    print("[Memory] cache limit: none applied (allocator default)")
    start = time.perf_counter()
    model = tinymoe.Model(path, build["dtype"])
    print(f"[Load] wall: {time.perf_counter() - start:.3f} s  MLX peak: {peak_gb():.2f} GB")
    memory("after load")
    trace_arch(build, args.prompt_tokens or 1)
    generate(model, prompt_tokens(args, model), args.warmup_tokens)
    memory("after warmup (prefill + warmup tokens)")
    prompt = prompt_tokens(args, model)
    prefill_s, decode_s = generate(model, prompt, args.max_tokens, os.environ.get(
        "MLXCEL_EXPORT_DECODE_DOT"))
    memory("after measured pass")
    print(f"{BOLD}[Profile Results]{RESET}")
    print(f"  Prompt tokens:    {len(prompt)}")
    print(f"  Generated tokens: {args.max_tokens}")
    print(f"  Prefill:          {prefill_s * 1e3:.2f} ms ({len(prompt) / prefill_s:.2f} tok/s)")
    decoded = max(args.max_tokens - 1, 1)
    print(f"  Decode:           {decode_s * 1e3:.2f} ms ({decoded / decode_s:.2f} tok/s)")
    print("  Decode path:      engine")
    print(f"  MLX peak memory:  {peak_gb():.2f} GB")
    return 0


def memory(when: str) -> None:
    peak = peak_gb()
    print(f"[Memory] {when}: active {peak:.2f} GB, cache 0.00 GB, active+cache {peak:.2f} GB, "
          f"phase peak {peak:.2f} GB")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="mlxcel-bench-decode")
    p.add_argument("-m", "--model", required=True)
    p.add_argument("-p", "--prompt", required=True)
    p.add_argument("-n", "--max-tokens", type=int, default=100)
    p.add_argument("--warmup-tokens", type=int, default=20)
    p.add_argument("--prompt-tokens", type=int)
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--no-chat-template", action="store_true")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    return p.parse_args()


def prompt_tokens(args: argparse.Namespace, model: tinymoe.Model) -> np.ndarray:
    """The pass's prompt; `[long-prompt]` is printed once per pass, as mlxcel does."""
    target = args.prompt_tokens or len(args.prompt.split())
    limit = model.max_context
    actual = min(target, int(limit) - args.max_tokens) if limit else target
    if args.prompt_tokens:
        context = f"Some({limit})" if limit else "None"  # a Rust Option printed with {:?}
        print(f"[long-prompt] target={target} tokens -> using {actual} tokens "
              f"(max_context={context}, reserved {args.max_tokens} for generation)",
              file=sys.stderr)
    return np.arange(actual) % model.vocab


def trace_arch(build: dict, prompt_len: int) -> None:
    """MLXCEL_TRACE_ARCH: the arch lines, once; the first call is the prefill's matmul."""
    if "MLXCEL_TRACE_ARCH" not in os.environ or build["backend"] != "cuda":
        return
    arch = build.get("cuda_arch", "121")
    sm = f"sm_{arch}"
    print(f"[mlxcel arch] compute capability {arch[:-1]}.{arch[-1]} ({sm}); compiled for "
          f"[{arch}]; coverage: native", file=sys.stderr)
    first = "qmm_sm80" if prompt_len > 1 else "qmv"
    print(f"[mlxcel arch] quantized matmul path on first call: {first} (device {sm})",
          file=sys.stderr)


def generate(model: tinymoe.Model, prompt: np.ndarray, count: int,
             dot_path: str | None = None) -> tuple[float, float]:
    """Prefill the prompt, then decode greedily; returns (prefill s, decode s)."""
    cache = model.new_cache()
    start = time.perf_counter()
    logits = model.forward(prompt, cache)
    with kernels.launch(kernels.ARG_REDUCE):
        token = int(np.argmax(logits))
    prefill = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(max(count - 1, 0)):
        if i == 0 and dot_path:
            with kernels.capture() as ops:
                logits = model.forward(np.array([token]), cache)
            write_dot(dot_path, ops)
        else:
            logits = model.forward(np.array([token]), cache)
        with kernels.launch(kernels.ARG_REDUCE):
            token = int(np.argmax(logits))
    return prefill, max(time.perf_counter() - start, 1e-9)


def write_dot(path: str, ops: list[str]) -> None:
    """One decode token's graph in the layout of MLX's own export_to_dot: every statement in
    braces, op nodes by numeric id with their primitive name, arrays named A, B, ..."""
    names = (name(i) for i in itertools.count())
    lines = ["digraph {", f'{{ rank=source; "{next(names)}"; }}']
    previous = "A"
    for i, op in enumerate(ops):
        node = 94015936000000 + 416 * i  # MLX prints the primitive's address
        weights = next(names)
        lines += [f'{{ rank=source; "{weights}"; }}',
                  f'{{ {node} [label ="{op}", shape=rectangle]; }}',
                  f'"{previous}" -> {node}', f'"{weights}" -> {node}']
        previous = next(names)
        sink = "rank=sink; " if i == len(ops) - 1 else ""
        lines += [f'{{ {sink}"{previous}"; }}', f'{node} -> "{previous}"']
    Path(path).write_text("\n".join(lines) + "\n}")


def name(i: int) -> str:
    """MLX's array names: A..Z, then AA, AB, ..."""
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(ord("A") + r) + letters
    return letters


def peak_gb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1 << 30) if sys.platform == "darwin" else rss / (1 << 20)


if __name__ == "__main__":
    sys.exit(main())
