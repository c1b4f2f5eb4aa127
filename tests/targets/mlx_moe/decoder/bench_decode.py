"""mlxcel-bench-decode: load a model directory, run a warm-up pass and a measured pass, and print
mlxcel's report. Flags, output lines, errors and environment hooks follow mlxcel's own tool."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import time
from pathlib import Path

import mlx.core as mx

from . import arch
from .config import ConfigError, ModelConfig, load_config
from .expert_path import PathError, decode_expert_path
from .generate import Sampler, Stop, prompt_ids, run_pass
from .model import Decoder, arrays_in
from .moe_detail import DETAIL_ENV, MoeDetail, SyncedMoeDetail
from .report import Peaks, long_prompt_line, phase_mark, profile_results, say

DOT_ENV = "MLXCEL_EXPORT_DECODE_DOT"
# MLX's CPU kernels have no fast bfloat16 path (about 8x slower than float32 on x86), so a CPU
# run computes in float32; on a GPU the config's torch_dtype is used.
CPU_DTYPE = mx.float32


class BenchError(Exception):
    """A failure the user can act on; printed as `Error: ...` with exit status 1."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mlxcel-bench-decode",
                                description="Decode benchmark of an MoE decoder on MLX.")
    p.add_argument("-m", "--model", required=True, help="model directory (holds config.json)")
    p.add_argument("-p", "--prompt", required=True, help="prompt text")
    p.add_argument("-n", "--max-tokens", type=int, default=100, help="tokens to generate")
    p.add_argument("--warmup-tokens", type=int, default=20, help="tokens in the warm-up pass")
    p.add_argument("--prompt-tokens", type=int, help="build a deterministic prompt of N tokens")
    p.add_argument("--ignore-eos", action="store_true", help="do not stop at the EOS token")
    p.add_argument("--no-chat-template", action="store_true", help="use the prompt as given")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-p", type=float, default=1.0)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        bench(args)
    except BenchError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    except (RuntimeError, MemoryError) as e:  # MLX's own failures, e.g. out of memory
        if os.environ.get("MLXMOE_TRACEBACK"):  # where in the model MLX failed, for a probe
            traceback.print_exc()
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


def bench(args: argparse.Namespace) -> None:
    if args.max_tokens < 0 or args.warmup_tokens < 0:
        raise BenchError("--max-tokens and --warmup-tokens must not be negative")
    try:
        config = load_config(Path(args.model))
        path = decode_expert_path(config, os.environ)
    except (ConfigError, PathError) as e:
        raise BenchError(f"failed to load model: {e}") from None
    dtype = CPU_DTYPE if mx.default_device() == mx.cpu else getattr(mx, config.dtype)
    cc = arch.compute_capability()
    tracing = arch.TRACE_ENV in os.environ
    say("[Memory] cache limit: none applied (allocator default)")
    if tracing:
        arch.print_device_line(cc)
    peaks = Peaks()
    model = load(config, dtype, path, peaks)
    device = "cpu" if mx.default_device() == mx.cpu else "gpu"
    say(f"[mlx_moe] device {device} ({mx.device_info().get('device_name', 'unknown')}), "
        f"activations {str(dtype).removeprefix('mlx.core.')}, family {config.family}, "
        f"decode experts: {path}")
    ids = prompt(args, config)
    if tracing:
        arch.print_first_qmm_line(cc, len(ids), config.heads * config.head_dim, config.hidden,
                                  config.quant, dtype)
    sample = Sampler(args.temperature, args.top_p, config.seed)
    stop = Stop(config.eos_token_id, args.ignore_eos)

    phase_mark("warmup_start")
    announce_prompt(args, config, len(ids))
    run_pass(model, ids, args.warmup_tokens, sample, stop)
    say(peaks.memory_line("after warmup (prefill + warmup tokens)"))

    phase_mark("measured_start")
    announce_prompt(args, config, len(ids))
    result = run_pass(model, ids, args.max_tokens, sample, stop,
                      on_decode_start=lambda: phase_mark("decode_start"),
                      dot_path=os.environ.get(DOT_ENV) or None)
    phase_mark("measured_end")
    say(peaks.memory_line("after measured pass"))
    print(profile_results(result, "engine", peaks.read()), flush=True)


def load(config: ModelConfig, dtype: mx.Dtype, path: str, peaks: Peaks) -> Decoder:
    detail: MoeDetail = (SyncedMoeDetail() if config.family == "qwen3_moe"
                         and os.environ.get(DETAIL_ENV) == "1" else MoeDetail())
    start = time.perf_counter()
    model = Decoder.build(config, dtype, path == "fused", detail)
    for layer in model.layers:  # one layer at a time keeps the load's peak near the weights
        mx.eval(arrays_in(layer))
    mx.eval(arrays_in(model))
    say(f"[Load] wall: {time.perf_counter() - start:.3f} s  MLX peak: {peaks.read() / 1e9:.2f} GB")
    say(peaks.memory_line("after load"))
    return model


def prompt(args: argparse.Namespace, config: ModelConfig) -> list[int]:
    if not args.prompt:
        raise BenchError("the prompt is empty; pass -p TEXT")
    used = None if args.prompt_tokens is None else prompt_length(args, config)
    return prompt_ids(args.prompt, not args.no_chat_template, used, config.vocab)


def prompt_length(args: argparse.Namespace, config: ModelConfig) -> int:
    target = args.prompt_tokens
    room = None if config.max_context is None else config.max_context - args.max_tokens
    used = target if room is None else min(target, room)
    if used <= 0:
        raise BenchError(f"--prompt-tokens {target} leaves no room: max_context "
                         f"{config.max_context} minus {args.max_tokens} generated tokens")
    return used


def announce_prompt(args: argparse.Namespace, config: ModelConfig, used: int) -> None:
    if args.prompt_tokens is not None:
        say(long_prompt_line(args.prompt_tokens, used, config.max_context, args.max_tokens))


def run() -> None:
    """The built program's entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
